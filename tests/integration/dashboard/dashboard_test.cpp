// The Grafana dashboard shipped in deploy/grafana/ against real data. A real Prometheus
// (Debian's prometheus, a child process with its configuration and storage in a temporary
// directory, on a free loopback port) scrapes a real gateway's admin /metrics every second while
// the test sends traffic (misses, hits, reviews pages and a few errors). Then every target of
// every panel in the dashboard is evaluated through Prometheus' HTTP API, with Grafana's
// variables substituted as Grafana would, and must return at least one series with a number.
// The test reads the dashboard itself, so a panel added later is checked too.

#include <boost/test/unit_test.hpp>

#include <simdjson.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "integration/stack.hpp"
#include "support/paths.hpp"

using namespace wg::test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kPrometheus = "/usr/bin/prometheus";
const std::string kDashboard = source_dir() + "/deploy/grafana/widget-gateway.json";

// Grafana's $__rate_interval is at least four scrape intervals (1 min when scraped every 15 s).
// Scraped every second here, 30 s holds the whole traffic and enough samples for every rate,
// even on a loaded machine where a scrape fails now and then.
constexpr std::string_view kRateInterval = "30s";

// The only ranges a panel may use: Grafana's rate interval, and one day for the per-day spend.
const std::regex kAllowedRange(R"(\[(\$__rate_interval|\$\{__rate_interval\}|1d)\])");
const std::regex kAnyRange(R"(\[[^\]]*\])");

struct PanelQuery {
  std::string panel;
  std::string expr;
};

void collect_queries(simdjson::dom::array panels, std::vector<PanelQuery>& out) {
  for (simdjson::dom::element panel : panels) {
    std::string_view title;
    if (panel["title"].get(title) != simdjson::SUCCESS) title = "(untitled)";
    // Collapsed rows hold their panels inside.
    simdjson::dom::array nested;
    if (panel["panels"].get(nested) == simdjson::SUCCESS) collect_queries(nested, out);
    simdjson::dom::array targets;
    if (panel["targets"].get(targets) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element target : targets) {
      std::string_view expr;
      if (target["expr"].get(expr) == simdjson::SUCCESS) {
        out.push_back({std::string(title), std::string(expr)});
      }
    }
  }
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// The query as Grafana sends it for one selected instance.
std::string substituted(std::string expr, const std::string& instance) {
  replace_all(expr, "${__rate_interval}", kRateInterval);
  replace_all(expr, "$__rate_interval", kRateInterval);
  replace_all(expr, "${instance}", instance);
  replace_all(expr, "$instance", instance);
  return expr;
}

std::string url_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// An instant query's answer: how many series, and how many of them hold a finite number.
struct PromAnswer {
  bool ok = false;
  std::size_t series = 0;
  std::size_t finite = 0;
  std::string body;
};

// Prometheus scraping one gateway's admin listener every second; stopped on destruction.
class Prometheus {
 public:
  explicit Prometheus(std::uint16_t admin_port)
      : port_(free_port()), instance_("127.0.0.1:" + std::to_string(admin_port)) {
    if (::access(kPrometheus, X_OK) != 0) {
      throw std::runtime_error(std::string(kPrometheus) +
                               " not found: install prometheus (deploy/install-deps.sh "
                               "--test-tools)");
    }
    const std::string config = dir_.write("prometheus.yml", R"(global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: widget-gateway
    static_configs:
      - targets: [")" + instance_ + R"("]
)");
    process_.emplace(std::vector<std::string>{
        kPrometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir_.file("data"),
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"});
    const auto deadline = Clock::now() + 30s;
    while (http_get(port_, "/-/ready").status != 200) {
      if (!process_->running() || Clock::now() > deadline) {
        throw std::runtime_error("prometheus did not start: " + process_->output());
      }
      std::this_thread::sleep_for(100ms);
    }
  }

  const std::string& instance() const { return instance_; }
  std::string output() const { return process_->output(); }

  PromAnswer query(const std::string& expr) {
    PromAnswer answer;
    const HttpResponse response = http_get(port_, "/api/v1/query?query=" + url_encoded(expr), {});
    answer.body = response.body;
    simdjson::dom::element root;
    if (response.status != 200 || parser_.parse(response.body).get(root) != simdjson::SUCCESS) {
      return answer;
    }
    std::string_view status, type;
    simdjson::dom::array result;
    if (root["status"].get(status) || status != "success" || root["data"]["resultType"].get(type) ||
        type != "vector" || root["data"]["result"].get(result)) {
      return answer;
    }
    answer.ok = true;
    for (simdjson::dom::element series : result) {
      ++answer.series;
      std::string_view value;
      if (series["value"].at(1).get(value) != simdjson::SUCCESS) continue;
      if (std::isfinite(std::strtod(std::string(value).c_str(), nullptr))) ++answer.finite;
    }
    return answer;
  }

  // The number a query answers with one series; nullopt otherwise.
  std::optional<double> number(const std::string& expr) {
    const HttpResponse response = http_get(port_, "/api/v1/query?query=" + url_encoded(expr), {});
    simdjson::dom::element root;
    simdjson::dom::array result;
    std::string_view value;
    if (response.status != 200 || parser_.parse(response.body).get(root) ||
        root["data"]["result"].get(result) || result.size() != 1 ||
        result.at(0)["value"].at(1).get(value)) {
      return std::nullopt;
    }
    return std::strtod(std::string(value).c_str(), nullptr);
  }

 private:
  TempDir dir_;  // declared before process_, so that it outlives Prometheus
  std::uint16_t port_;
  std::string instance_;
  std::optional<ChildProcess> process_;
  simdjson::dom::parser parser_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(dashboard_test)

BOOST_AUTO_TEST_CASE(the_dashboard_has_its_variables_and_every_query_is_scoped_to_them) {
  simdjson::dom::parser parser;
  simdjson::dom::element dashboard;
  BOOST_REQUIRE_MESSAGE(parser.load(kDashboard).get(dashboard) == simdjson::SUCCESS,
                        kDashboard + " is not JSON");
  int64_t schema = 0;
  BOOST_REQUIRE(dashboard["schemaVersion"].get(schema) == simdjson::SUCCESS);
  BOOST_CHECK_GE(schema, 36);  // Grafana 9 and later

  bool datasource = false;
  bool instance = false;
  simdjson::dom::array variables;
  BOOST_REQUIRE(dashboard["templating"]["list"].get(variables) == simdjson::SUCCESS);
  for (simdjson::dom::element variable : variables) {
    std::string_view name, type, query;
    BOOST_REQUIRE(!variable["name"].get(name) && !variable["type"].get(type));
    if (name == "datasource") {
      datasource = type == "datasource" && !variable["query"].get(query) && query == "prometheus";
    } else if (name == "instance") {
      instance = type == "query" && !variable["query"]["query"].get(query) &&
                 query == "label_values(wg_build_info, instance)";
    }
  }
  BOOST_CHECK_MESSAGE(datasource, "a `datasource` variable of type datasource (prometheus)");
  BOOST_CHECK_MESSAGE(instance,
                      "an `instance` variable from label_values(wg_build_info, instance)");

  simdjson::dom::array panels;
  BOOST_REQUIRE(dashboard["panels"].get(panels) == simdjson::SUCCESS);
  // Every panel asks the chosen data source and has something to ask.
  for (simdjson::dom::element panel : panels) {
    std::string_view type, title, uid;
    BOOST_REQUIRE(!panel["type"].get(type) && !panel["title"].get(title));
    if (type == "row") continue;
    BOOST_TEST_CONTEXT(title) {
      BOOST_CHECK(!panel["datasource"]["uid"].get(uid) && uid == "${datasource}");
      simdjson::dom::array targets;
      BOOST_CHECK(!panel["targets"].get(targets) && targets.size() > 0);
    }
  }

  std::vector<PanelQuery> queries;
  collect_queries(panels, queries);
  BOOST_REQUIRE_GE(queries.size(), 11u);
  for (const auto& q : queries) {
    BOOST_TEST_CONTEXT(q.panel << ": " << q.expr) {
      BOOST_CHECK(q.expr.find("$instance") != std::string::npos);
      // Every range is Grafana's rate interval (or the one day of the per-day spend).
      for (std::sregex_iterator it(q.expr.begin(), q.expr.end(), kAnyRange), end; it != end; ++it) {
        BOOST_CHECK_MESSAGE(std::regex_match(it->str(), kAllowedRange), it->str());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_panel_query_returns_data_from_a_gateway_under_traffic) {
  simdjson::dom::parser parser;
  simdjson::dom::element dashboard;
  simdjson::dom::array panels;
  BOOST_REQUIRE(parser.load(kDashboard).get(dashboard) == simdjson::SUCCESS);
  BOOST_REQUIRE(dashboard["panels"].get(panels) == simdjson::SUCCESS);
  std::vector<PanelQuery> queries;
  collect_queries(panels, queries);

  RedisServer redis;
  Stub stub({}, 50);
  // A limit, so that the quota's gauges and bounds are numbers an operator would see. Every new
  // widget comes from the test's one address: the per-client limit on ids not yet known is off.
  Gateway gateway(stub.base_url(), redis.url(), {"--quota-limit", "100000"},
                  "[access]\nunknown_per_ip_rate = 0\n");
  Prometheus prometheus(gateway.admin_port());
  const std::string up = "up{instance=\"" + prometheus.instance() + "\"}";
  BOOST_REQUIRE_MESSAGE(eventually([&] { return prometheus.number(up) == 1.0; }, 30s),
                        "Prometheus never scraped the gateway: " + prometheus.output());

  // About 8 s of traffic, a round every 200 ms: each round a new widget (a miss, sent
  // upstream), the same again (a hit), a reviews page, and every fourth round an error (an
  // invalid page size: 400; an unknown route: 404).
  const auto widgets = stub.widgets(40);
  int errors = 0;
  for (std::size_t round = 0; round < widgets.size(); ++round) {
    const std::string& id = widgets[round].id;
    BOOST_CHECK_EQUAL(gateway.get(widget_path(id)).status, 200);
    BOOST_CHECK_EQUAL(gateway.get(widget_path(id)).status, 200);
    BOOST_CHECK_EQUAL(gateway.get(reviews_path(id, "skip=0&limit=20")).status, 200);
    if (round % 4 == 0) {
      errors += gateway.get(reviews_path(id, "limit=abc")).status == 400;
      errors += gateway.get("/api/v1/nothing-here").status == 404;
    }
    std::this_thread::sleep_for(200ms);
  }
  BOOST_CHECK_GT(errors, 0);

  // Wait for a successful scrape taken after the traffic, so that the rates see all of it.
  const std::string build_info = "wg_build_info{instance=\"" + prometheus.instance() + "\"}";
  const double traffic_ended = unix_now();
  BOOST_REQUIRE_MESSAGE(eventually(
                            [&] {
                              auto at = prometheus.number("timestamp(" + build_info + ")");
                              return at && *at > traffic_ended;
                            },
                            20s),
                        "no scrape after the traffic");
  const double scrapes = prometheus.number("count_over_time(" + up + "[5m])").value_or(0);
  BOOST_TEST_MESSAGE("scrapes: " << scrapes);
  BOOST_REQUIRE_GE(scrapes, 5);

  for (const auto& q : queries) {
    const std::string expr = substituted(q.expr, prometheus.instance());
    const PromAnswer answer = prometheus.query(expr);
    BOOST_TEST_CONTEXT(q.panel << ": " << expr) {
      BOOST_CHECK_MESSAGE(answer.ok, "Prometheus refused it: " + answer.body);
      BOOST_CHECK_MESSAGE(answer.finite > 0, "no series with a number ("
                                                 << answer.series << " series): " << answer.body);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()  // dashboard_test
