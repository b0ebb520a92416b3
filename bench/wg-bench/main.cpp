// wg-bench: the load generator of the bench harness (bench/README.md), and with
// --serve-constant the constant-response reference server. Only ever talks to loopback.

#include <unistd.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "wg-bench/constant_server.hpp"
#include "wg-bench/load_runner.hpp"
#include "wg-bench/probe.hpp"
#include "wg-bench/report.hpp"
#include "wg-bench/request_mix.hpp"
#include "wg-bench/scenario.hpp"
#include "wg-bench/target.hpp"
#include "wg-bench/thresholds.hpp"

namespace {

using namespace wg::bench;

constexpr std::string_view kUsage =
    "usage: wg-bench --target http://127.0.0.1:PORT [options]      run a load\n"
    "       wg-bench --scenario FILE --print-runner                 scenario settings for run.sh\n"
    "       wg-bench --scenario FILE [--ids FILE] --print-requests N  the first N request lines\n"
    "       wg-bench --serve-constant [--listen 127.0.0.1:PORT] [--body-file FILE]\n"
    "                [--reviews-body-file FILE] [--threads N]\n"
    "load options:\n"
    "  --scenario FILE        TOML scenario (bench/scenarios/); default: built-in mix\n"
    "  --ids FILE             widget ids: JSON from the stub's /__stub/widgets or one per line\n"
    "                         (default: synthetic ids)\n"
    "  --out FILE             write the results as JSON\n"
    "  --label NAME           name of the system measured (default: target)\n"
    "  --mode closed|open     closed: N connections as fast as possible; open: fixed --rate\n"
    "  --connections N  --rate R  --duration D  --warmup D  --requests N  --timeout D\n"
    "  --threads N            load generator io threads (default 1)\n"
    "  --http2                speak HTTP/2 (https: ALPN h2; http: prior knowledge, h2c)\n"
    "  --streams N            HTTP/2: concurrent streams per connection (default 1)\n"
    "  --cacert FILE          https: verify the server's certificate against FILE (default: no\n"
    "                         verification, for self-signed test certificates on loopback)\n"
    "  --tls-server-name NAME https: the name sent in SNI and verified (default: the address)\n"
    "  --seed S  --pool N     request sequence seed and pool size\n"
    "  --ramp STAGES          ramp the load, TARGET:DURATION,...  from 0 (open loop: req/s,\n"
    "                         closed loop: connections); replaces --duration and the warm-up\n"
    "  --fail-if CONDITIONS   exit 5 when one holds, e.g. 'p99>5ms,errors>0,rate<0.95'\n"
    "  --slow-above D         count the answers slower than D in each second and minute of\n"
    "                         the JSON series (\"slow\"), e.g. 10ms (default: not counted)\n"
    "  --hgrm FILE            write the latency histogram as HdrHistogram .hgrm text (ms)\n"
    "  --progress auto|on|off live line on stderr (auto: only when stderr is a terminal)\n"
    "  --tsv                  print a tab-separated header line and summary line on stdout\n"
    "defaults: closed loop, 16 connections, 10s after a 2s warm-up, 5s timeout, 1 thread,\n"
    "          or the scenario's [load]; durations: 500ms, 2s, 1m. Loopback targets only.\n"
    "exit status: 0 ok; 1 runtime error; 2 usage (nothing sent); 3 connection failure;\n"
    "             4 no measured request got an expected answer; 5 a --fail-if condition held\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "wg-bench: %s\n%.*s", message.c_str(), static_cast<int>(kUsage.size()),
               kUsage.data());
  std::exit(2);
}

template <class T>
T parse_number(std::string_view flag, std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    usage_error(std::string(flag) + " expects a number, got \"" + std::string(text) + "\"");
  }
  return value;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Args {
  std::optional<std::string> target;
  std::optional<std::string> scenario_file;
  std::optional<std::string> ids_file;
  std::optional<std::string> out_file;
  std::optional<std::string> label;
  std::optional<std::string> hgrm_file;
  std::optional<std::string> ramp;
  std::optional<std::string> fail_if;
  std::string progress = "auto";
  bool tsv = false;
  bool http2 = false;
  std::optional<unsigned> streams;
  std::string cacert;
  std::string tls_server_name;
  bool print_runner = false;
  std::optional<std::size_t> print_requests;
  bool serve_constant = false;
  std::string listen = "127.0.0.1:0";
  std::optional<std::string> body_file;
  std::optional<std::string> reviews_body_file;
  // Overrides of the scenario's [load] and top-level values.
  std::optional<LoadMode> mode;
  std::optional<unsigned> connections, threads;
  std::optional<double> rate;
  std::optional<Millis> duration, warmup, timeout, slow_above;
  std::optional<std::uint64_t> requests, seed;
  std::optional<std::size_t> pool;
};

Millis duration_flag(std::string_view flag, std::string_view value) {
  try {
    return parse_duration(value);
  } catch (const ScenarioError& e) {
    usage_error(std::string(flag) + ": " + e.what());
  }
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
      std::exit(0);
    }
    if (flag == "--tsv") {
      a.tsv = true;
      continue;
    }
    if (flag == "--http2") {
      a.http2 = true;
      continue;
    }
    if (flag == "--print-runner") {
      a.print_runner = true;
      continue;
    }
    if (flag == "--serve-constant") {
      a.serve_constant = true;
      continue;
    }
    if (i + 1 >= argc) usage_error("missing value for " + std::string(flag));
    const std::string value = argv[++i];
    if (flag == "--target")
      a.target = value;
    else if (flag == "--scenario")
      a.scenario_file = value;
    else if (flag == "--ids")
      a.ids_file = value;
    else if (flag == "--out")
      a.out_file = value;
    else if (flag == "--print-requests")
      a.print_requests = parse_number<std::size_t>(flag, value);
    else if (flag == "--streams") {
      a.streams = parse_number<unsigned>(flag, value);
      if (*a.streams == 0 || *a.streams > 1000) usage_error("--streams must be in 1..1000");
    } else if (flag == "--cacert")
      a.cacert = value;
    else if (flag == "--tls-server-name")
      a.tls_server_name = value;
    else if (flag == "--hgrm")
      a.hgrm_file = value;
    else if (flag == "--ramp")
      a.ramp = value;
    else if (flag == "--fail-if")
      a.fail_if = value;
    else if (flag == "--label")
      a.label = value;
    else if (flag == "--progress") {
      if (value != "auto" && value != "on" && value != "off") usage_error("--progress auto|on|off");
      a.progress = value;
    } else if (flag == "--listen")
      a.listen = value;
    else if (flag == "--body-file")
      a.body_file = value;
    else if (flag == "--reviews-body-file")
      a.reviews_body_file = value;
    else if (flag == "--mode") {
      if (value == "closed")
        a.mode = LoadMode::closed;
      else if (value == "open")
        a.mode = LoadMode::open;
      else
        usage_error("--mode closed|open");
    } else if (flag == "--connections") {
      a.connections = parse_number<unsigned>(flag, value);
      if (*a.connections == 0) usage_error("--connections must be at least 1");
    } else if (flag == "--threads") {
      a.threads = parse_number<unsigned>(flag, value);
      if (*a.threads == 0 || *a.threads > 256) usage_error("--threads must be in 1..256");
    } else if (flag == "--rate") {
      a.rate = parse_number<double>(flag, value);
      if (!(*a.rate > 0)) usage_error("--rate must be > 0");
    } else if (flag == "--duration")
      a.duration = duration_flag(flag, value);
    else if (flag == "--warmup")
      a.warmup = duration_flag(flag, value);
    else if (flag == "--timeout") {
      a.timeout = duration_flag(flag, value);
      if (a.timeout->count() <= 0) usage_error("--timeout must be > 0");
    } else if (flag == "--slow-above") {
      a.slow_above = duration_flag(flag, value);
      if (a.slow_above->count() <= 0) usage_error("--slow-above must be at least 1ms");
    } else if (flag == "--requests")
      a.requests = parse_number<std::uint64_t>(flag, value);
    else if (flag == "--seed")
      a.seed = parse_number<std::uint64_t>(flag, value);
    else if (flag == "--pool") {
      a.pool = parse_number<std::size_t>(flag, value);
      if (*a.pool == 0) usage_error("--pool must be at least 1");
    } else
      usage_error("unknown option " + std::string(flag));
  }
  return a;
}

int serve_constant(const Args& args) {
  std::string error;
  const auto listen = parse_listen(args.listen, error);
  if (!listen) usage_error("--listen: " + error);
  std::string body = "{\"constant\":true}";
  if (args.body_file) body = read_file(*args.body_file);
  std::string reviews_body;
  if (args.reviews_body_file) reviews_body = read_file(*args.reviews_body_file);
  const unsigned threads = args.threads.value_or(1);
  boost::asio::io_context ioc(static_cast<int>(threads));
  const boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address(listen->address),
                                                listen->port);
  ConstantServer server(ioc, endpoint, std::move(body), std::move(reviews_body));
  server.start();
  boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    server.stop();
    ioc.stop();  // open keep-alive connections would otherwise hold the loop
  });
  const auto bound = server.local_endpoint();
  std::string address = bound.address().to_string();
  if (bound.address().is_v6()) address = "[" + address + "]";
  std::fprintf(stderr,
               "{\"event\":\"listening\",\"listener\":\"constant\",\"address\":\"%s:%u\"}\n",
               address.c_str(), static_cast<unsigned>(bound.port()));
  std::fflush(stderr);
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  return 0;
}

std::vector<WidgetInfo> widgets_for(const Args& args, const Scenario& scenario) {
  auto widgets = args.ids_file ? parse_widget_list(read_file(*args.ids_file))
                               : synthetic_widgets(scenario.keys.widgets);
  if (widgets.empty()) throw std::runtime_error("the widget id list is empty");
  return widgets;
}

// The request lines ("GET /api/...") of the first N requests of the pool, one per line: what
// the runner script samples to size the constant reference's answers like the scenario's.
int print_request_lines(const Args& args, const Scenario& scenario) {
  const auto requests = build_requests(scenario, widgets_for(args, scenario), "127.0.0.1");
  for (std::size_t i = 0; i < *args.print_requests && i < requests.size(); ++i) {
    const std::string& text = requests[i].text;
    const auto line_end = text.find("\r\n");
    const std::string_view line(text.data(), line_end);
    const auto version = line.rfind(' ');
    std::fwrite(line.data(), 1, version, stdout);
    std::fputc('\n', stdout);
  }
  return 0;
}

// The scenario's load with the command line's overrides, refusing combinations that cannot
// apply (exit 2 before anything is sent).
LoadSpec effective_load(const Args& args, Scenario& scenario) {
  auto& load = scenario.load;
  if (args.mode) load.mode = *args.mode;
  if (args.connections) load.connections = *args.connections;
  if (args.threads) load.threads = *args.threads;
  if (args.rate) load.rate = *args.rate;
  if (args.duration) load.duration = *args.duration;
  if (args.warmup) load.warmup = *args.warmup;
  if (args.timeout) load.timeout = *args.timeout;
  if (args.requests) load.requests = *args.requests;
  if (args.slow_above) load.slow_above = *args.slow_above;
  if (args.seed) scenario.seed = *args.seed;
  if (args.pool) scenario.pool = *args.pool;
  if (args.rate && load.mode == LoadMode::closed) {
    usage_error("--rate applies to the open loop only (add --mode open)");
  }
  if (args.requests && args.duration) usage_error("--requests and --duration exclude each other");
  if (args.ramp) {
    if (args.duration || args.warmup || args.requests) {
      usage_error("--ramp sets the run's length: drop --duration, --warmup and --requests");
    }
    if (load.mode == LoadMode::open && args.rate)
      usage_error("--ramp gives the rates: drop --rate");
    if (load.mode == LoadMode::closed && args.connections) {
      usage_error("--ramp gives the connections in closed loop: drop --connections");
    }
    try {
      load.ramp = parse_ramp(*args.ramp);
    } catch (const ScenarioError& e) {
      usage_error(e.what());
    }
    if (load.mode == LoadMode::closed && load_profile(load).peak() < 1) {
      usage_error("--ramp in closed loop needs a stage of at least 1 connection");
    }
    load = resolve_ramp(load);
  } else if (load.mode == LoadMode::open && !(load.rate > 0)) {
    usage_error("open loop needs --rate (or --ramp)");
  }
  if (load.requests == 0 && load.duration.count() <= 0) usage_error("--duration must be > 0");
  return load;
}

std::vector<Condition> conditions_of(const Args& args, const LoadSpec& load) {
  if (!args.fail_if) return {};
  std::vector<Condition> conditions;
  try {
    conditions = parse_fail_if(*args.fail_if);
  } catch (const ScenarioError& e) {
    usage_error(e.what());
  }
  for (const auto& c : conditions) {
    if (c.needs_open_loop() && load.mode != LoadMode::open) {
      usage_error("--fail-if \"" + c.text + "\" applies to the open loop only");
    }
  }
  return conditions;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

int run(const Args& args) {
  Scenario scenario;
  if (args.scenario_file) scenario = load_scenario_file(*args.scenario_file);
  if (args.print_runner) {
    std::fputs(runner_lines(scenario).c_str(), stdout);
    return 0;
  }
  if (args.print_requests) return print_request_lines(args, scenario);
  if (!args.target) usage_error("--target is required");
  std::string error;
  const auto target = parse_target(*args.target, error);
  if (!target) usage_error("--target: " + error);
  const LoadSpec load = effective_load(args, scenario);
  const auto conditions = conditions_of(args, load);
  if (args.streams && !args.http2) usage_error("--streams applies to --http2 only");
  if ((!args.cacert.empty() || !args.tls_server_name.empty()) && !target->tls) {
    usage_error("--cacert and --tls-server-name apply to https:// targets only");
  }

  const auto widgets = widgets_for(args, scenario);
  const std::string short_ids =
      args.ids_file ? short_id_list_warning(widgets.size(), scenario) : std::string();
  const auto requests = build_requests(scenario, widgets, target->host_header);
  LoadOptions options;
  options.target = *target;
  options.protocol = args.http2 ? Protocol::h2 : Protocol::http1;
  options.streams = args.streams.value_or(1);
  options.tls_ca_file = args.cacert;
  options.tls_server_name = args.tls_server_name;
  options.load = load;
  options.requests = &requests;
  options.progress = args.progress == "on" || (args.progress == "auto" && ::isatty(STDERR_FILENO));

  ReportContext context;
  context.label = args.label.value_or(target->host_header);
  context.scenario = scenario.name;
  context.target = target->host_header;
  context.load = load;
  context.seed = scenario.seed;
  context.pool = scenario.pool;
  context.protocol = std::string(args.http2 ? "h2" : "http/1.1") + (target->tls ? " over TLS" : "");

  LoadResult result;
  Verdict verdict;
  const std::string unreachable =
      connect_error(*target, std::min<Millis>(load.timeout, std::chrono::seconds(2)));
  if (!unreachable.empty()) {
    verdict.status = ExitStatus::connection_failed;
    verdict.warnings.push_back("cannot connect to " + target->host_header + ": " + unreachable +
                               "; nothing was sent");
  } else {
    result = run_load(options);
  }
  const RunFigures figures = figures_of(result, load.mode);
  if (unreachable.empty()) {
    const Assessment assessment = assess(figures, result.stats);
    verdict.status = assessment.status;
    verdict.warnings = assessment.warnings;
    if (!short_ids.empty()) verdict.warnings.insert(verdict.warnings.begin(), short_ids);
    verdict.crossed = crossed(conditions, figures);
    if (!verdict.crossed.empty() && verdict.status == ExitStatus::ok) {
      verdict.status = ExitStatus::threshold_crossed;
    }
  }
  if (args.out_file) write_file(*args.out_file, to_json(context, result, figures, verdict));
  if (args.hgrm_file) write_file(*args.hgrm_file, to_hgrm(result.stats.latency));
  std::fputs(human_summary(context, result, figures, verdict).c_str(), stderr);
  if (args.tsv) {
    std::fputs(tsv_header().c_str(), stdout);
    std::fputs(to_tsv_line(context, result, figures, verdict).c_str(), stdout);
  }
  return static_cast<int>(verdict.status);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  const Args args = parse_args(argc, argv);
  try {
    return args.serve_constant ? serve_constant(args) : run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wg-bench: %s\n", e.what());
    return 1;
  }
}
