// widget-upstream-stub: a stand-in for the upstream Widget Reviews Data API, for integration
// tests, local runs and benchmarks. Prints one "listening" line on stderr, serves until SIGINT
// or SIGTERM, exits 0.

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "upstream-stub/stub_server.hpp"

namespace {

constexpr std::string_view kUsage =
    "usage: widget-upstream-stub [options]\n"
    "  --listen HOST:PORT   address to listen on (default 127.0.0.1:8081; port 0 = ephemeral)\n"
    "  --widgets N          number of widgets (default 100)\n"
    "  --seed S             data set seed (default 1)\n"
    "  --threads N          I/O threads (default 1)\n"
    "  --cache-mb N         rendered widgets kept in memory, MiB (default 512)\n"
    "  --prerender          render the data set (within --cache-mb) before listening\n"
    "  --expires-at T       upstream's daily refresh at unix time T: API 200s carry\n"
    "                       Cache-Control max-age and Expires for it (or a later day's)\n"
    "  --tls-cert FILE      PEM certificate chain; with --tls-key, serve HTTPS\n"
    "  --tls-key FILE       PEM private key\n"
    "  --help               show this help\n"
    "Test controls: GET /__stub/stats, POST /__stub/reset, POST /__stub/fault?mode=M&count=N&\n"
    "endpoint=widget|reviews|any&retry_after=V, POST /__stub/latency?ms=N,\n"
    "GET /__stub/widgets?limit=N\n";

template <class T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "widget-upstream-stub: %s\n%.*s", message.c_str(),
               static_cast<int>(kUsage.size()), kUsage.data());
  std::exit(2);
}

struct Args {
  wg::stub::StubOptions options;
  unsigned threads = 1;
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
      std::exit(0);
    }
    if (flag == "--prerender") {
      args.options.prerender = true;
      continue;
    }
    if (i + 1 >= argc) fail("missing value for " + std::string(flag));
    const std::string_view value = argv[++i];
    if (flag == "--listen") {
      const auto colon = value.rfind(':');
      const auto port = colon == std::string_view::npos
                            ? std::nullopt
                            : parse_number<std::uint16_t>(value.substr(colon + 1));
      if (!port || colon == 0) fail("--listen expects HOST:PORT");
      args.options.host = std::string(value.substr(0, colon));
      if (args.options.host.size() > 2 && args.options.host.front() == '[') {  // [::1]:8081
        args.options.host = args.options.host.substr(1, args.options.host.size() - 2);
      }
      args.options.port = *port;
    } else if (flag == "--widgets") {
      const auto n = parse_number<std::size_t>(value);
      if (!n) fail("--widgets expects a number");
      args.options.widgets = *n;
    } else if (flag == "--seed") {
      const auto n = parse_number<std::uint64_t>(value);
      if (!n) fail("--seed expects a number");
      args.options.seed = *n;
    } else if (flag == "--threads") {
      const auto n = parse_number<unsigned>(value);
      if (!n || *n == 0 || *n > 256) fail("--threads expects a number in 1..256");
      args.threads = *n;
    } else if (flag == "--cache-mb") {
      const auto n = parse_number<std::size_t>(value);
      if (!n || *n == 0 || *n > (std::size_t{1} << 20))
        fail("--cache-mb expects a number in 1..1048576");
      args.options.cache_bytes = *n << 20;
    } else if (flag == "--expires-at") {
      const auto n = parse_number<std::int64_t>(value);
      if (!n || *n < 0) fail("--expires-at expects seconds since the epoch");
      args.options.expires_at = *n;
    } else if (flag == "--tls-cert") {
      args.options.tls_cert_file = std::string(value);
    } else if (flag == "--tls-key") {
      args.options.tls_key_file = std::string(value);
    } else {
      fail("unknown option " + std::string(flag));
    }
  }
  if (args.options.tls_cert_file.empty() != args.options.tls_key_file.empty()) {
    fail("--tls-cert and --tls-key go together");
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  boost::asio::io_context ioc(static_cast<int>(args.threads));
  std::optional<wg::stub::StubServer> server;
  try {
    server.emplace(ioc, args.options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "widget-upstream-stub: cannot start: %s\n", e.what());
    return 1;
  }
  server->start();

  boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) server->stop();
  });

  const auto endpoint = server->local_endpoint();
  std::string address = endpoint.address().to_string();
  if (endpoint.address().is_v6()) address = "[" + address + "]";
  // Tests parse this line for the real port.
  std::fprintf(stderr, "{\"event\":\"listening\",\"listener\":\"stub\",\"address\":\"%s:%u\"}\n",
               address.c_str(), static_cast<unsigned>(endpoint.port()));
  std::fflush(stderr);

  std::vector<std::thread> threads;
  for (unsigned i = 1; i < args.threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& thread : threads) thread.join();
  return 0;
}
