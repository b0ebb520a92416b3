#include <boost/test/unit_test.hpp>

#include <string>

#include "wg-bench/scenario.hpp"
#include "support/paths.hpp"

using namespace std::chrono_literals;
using namespace wg::bench;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_scenario(text, "t.toml");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scenario_test)

BOOST_AUTO_TEST_SUITE(scenario_parsing)

BOOST_AUTO_TEST_CASE(empty_file_gives_the_defaults) {
  const Scenario s = parse_scenario("", "t.toml");
  BOOST_TEST(s.name == "default");
  BOOST_TEST((s.load.mode == LoadMode::closed));
  BOOST_TEST(s.load.connections == 16u);
  BOOST_TEST((s.load.duration == 10s));
  BOOST_TEST((s.keys.distribution == KeyDistribution::zipf));
  BOOST_TEST(s.reviews.limits.size() == 1u);
  BOOST_TEST((s.runner.fault == FaultKind::none));
}

BOOST_AUTO_TEST_CASE(full_file_is_read) {
  const Scenario s = parse_scenario(R"(
name = "zipf-site"
description = "a warm site"
seed = 42
pool = 5000
[load]
mode = "open"
connections = 64
rate = 2500.5
duration = "8s"
warmup = "1500ms"
requests = 0
timeout = "2s"
threads = 2
[keys]
widgets = 10000
distribution = "zipf"
zipf_exponent = 1.1
repeat = 3
[mix]
widget = 1
reviews = 3
head = 0.05
invalid = 0.01
hostile = 0.02
unknown_params = 0.5
[reviews]
limits = [10, 20, 50]
max_pages = 7
page_exponent = 2
typed = 0.1
odd_skip = 0.01
[runner]
stub_widgets = 10000
fault = "upstream"
fault_mode = "hang"
fault_at = "3s"
fault_for = "2s"
cache_ttl = "2s"
upstream_latency = "40ms"
reps = 2
systems = ["gateway", "nginx"]
gateway_l1 = false
derive_pages = false
)",
                                    "t.toml");
  BOOST_TEST(s.name == "zipf-site");
  BOOST_TEST(s.description == "a warm site");
  BOOST_TEST(s.seed == 42u);
  BOOST_TEST(s.pool == 5000u);
  BOOST_TEST((s.load.mode == LoadMode::open));
  BOOST_TEST(s.load.connections == 64u);
  BOOST_TEST(s.load.rate == 2500.5);
  BOOST_TEST((s.load.duration == 8s));
  BOOST_TEST((s.load.warmup == 1500ms));
  BOOST_TEST((s.load.timeout == 2s));
  BOOST_TEST(s.load.threads == 2u);
  BOOST_TEST(s.keys.widgets == 10000u);
  BOOST_TEST(s.keys.zipf_exponent == 1.1);
  BOOST_TEST(s.keys.repeat == 3u);
  BOOST_TEST(s.mix.widget == 1.0);
  BOOST_TEST(s.mix.reviews == 3.0);
  BOOST_TEST(s.mix.unknown_params == 0.5);
  BOOST_TEST((s.reviews.limits == std::vector<unsigned>{10, 20, 50}));
  BOOST_TEST(s.reviews.max_pages == 7u);
  BOOST_TEST(s.reviews.page_exponent == 2.0);
  BOOST_TEST(s.runner.stub_widgets == 10000u);
  BOOST_TEST((s.runner.fault == FaultKind::upstream));
  BOOST_TEST(s.runner.fault_mode == "hang");
  BOOST_TEST((s.runner.fault_for == 2s));
  BOOST_TEST((s.runner.cache_ttl == 2s));
  BOOST_TEST(s.runner.reps == 2u);
  BOOST_TEST((s.runner.systems == std::vector<std::string>{"gateway", "nginx"}));
  BOOST_TEST(!s.runner.gateway_l1);
  BOOST_TEST(!s.runner.derive_pages);

  const std::string lines = runner_lines(s);
  BOOST_TEST(contains(lines, "name=zipf-site\n"));
  BOOST_TEST(contains(lines, "fault=upstream\n"));
  BOOST_TEST(contains(lines, "fault_mode=hang\n"));
  BOOST_TEST(contains(lines, "fault_at_ms=3000\n"));
  BOOST_TEST(contains(lines, "cache_ttl_ms=2000\n"));
  BOOST_TEST(contains(lines, "stub_widgets=10000\n"));
  BOOST_TEST(contains(lines, "reps=2\n"));
  BOOST_TEST(contains(lines, "upstream_latency_ms=40\n"));
  BOOST_TEST(contains(lines, "systems=gateway,nginx\n"));
  BOOST_TEST(contains(lines, "gateway_l1=0\n"));
  BOOST_TEST(contains(lines, "derive_pages=0\n"));
}

BOOST_AUTO_TEST_CASE(walker_and_baseline_are_read) {
  const Scenario none = parse_scenario("", "t.toml");
  BOOST_TEST(none.walker.share == 0.0);
  BOOST_TEST(none.runner.baseline.empty());
  BOOST_TEST(contains(runner_lines(none), "walker_share=0\n"));
  BOOST_TEST(contains(runner_lines(none), "baseline=\n"));

  const Scenario s = parse_scenario(R"(
name = "quota-walk"
[walker]
share = 0.1
widgets = 20
limit = 1
skip_step = 300
skip_max = 179700
[runner]
baseline = "zipf-site"
)",
                                    "t.toml");
  BOOST_TEST(s.walker.share == 0.1);
  BOOST_TEST(s.walker.widgets == 20u);
  BOOST_TEST(s.walker.limit == 1u);
  BOOST_TEST(s.walker.skip_step == 300u);
  BOOST_TEST(s.walker.skip_max == 179700u);
  BOOST_TEST(s.runner.baseline == "zipf-site");
  const std::string lines = runner_lines(s);
  BOOST_TEST(contains(lines, "walker_share=0.1\n"));
  BOOST_TEST(contains(lines, "baseline=zipf-site\n"));

  BOOST_TEST(
      contains(error_of("[walker]\nshare = 1"), "walker.share must be a number in [0, 0.99]"));
  BOOST_TEST(contains(error_of("[walker]\nlimit = 301"), "walker.limit"));
  BOOST_TEST(contains(error_of("[walker]\nskip_step = 0"), "walker.skip_step"));
  BOOST_TEST(contains(error_of("[walker]\nstep = 300"), "unknown key walker.step"));
  BOOST_TEST(contains(error_of("[runner]\nbaseline = \"../x\""), "runner.baseline may hold only"));
  BOOST_TEST(contains(error_of("name = \"a\"\n[runner]\nbaseline = \"a\""),
                      "runner.baseline must name another scenario"));
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_named) {
  BOOST_TEST(contains(error_of("nmae = \"x\""), "unknown key nmae"));
  BOOST_TEST(contains(error_of("[load]\nconections = 5"), "unknown key load.conections"));
  BOOST_TEST(contains(error_of("[keys]\nzipf = 1.1"), "unknown key keys.zipf"));
  BOOST_TEST(contains(error_of("[nope]\na = 1"), "unknown key nope"));
  BOOST_TEST(contains(error_of("[runner]\nfaults = \"redis\""), "unknown key runner.faults"));
}

BOOST_AUTO_TEST_CASE(bad_values_are_named) {
  BOOST_TEST(
      contains(error_of("[load]\nmode = \"half\""), "load.mode must be one of closed, open"));
  BOOST_TEST(contains(error_of("[load]\nconnections = 0"), "load.connections"));
  BOOST_TEST(
      contains(error_of("[load]\nconnections = \"8\""), "load.connections must be an integer"));
  BOOST_TEST(contains(error_of("[load]\nduration = 5"), "load.duration must be a duration"));
  BOOST_TEST(contains(error_of("[load]\nduration = \"5 parsecs\""), "load.duration"));
  BOOST_TEST(contains(error_of("[load]\nmode = \"open\""), "load.rate must be > 0"));
  BOOST_TEST(contains(error_of("[load]\nduration = \"0s\""), "load.duration and load.requests"));
  BOOST_TEST(contains(error_of("[mix]\nhead = 1.5"), "mix.head must be a number in [0, 1]"));
  BOOST_TEST(
      contains(error_of("[mix]\ninvalid = 0.6\nhostile = 0.6"), "mix.invalid + mix.hostile"));
  BOOST_TEST(contains(error_of("[mix]\nwidget = 0\nreviews = 0"), "mix.widget + mix.reviews"));
  BOOST_TEST(contains(error_of("[reviews]\nlimits = []"), "reviews.limits"));
  BOOST_TEST(contains(error_of("[reviews]\nlimits = [0]"), "reviews.limits"));
  BOOST_TEST(contains(error_of("[reviews]\nlimits = [301]"), "reviews.limits"));
  BOOST_TEST(contains(error_of("[keys]\ndistribution = \"normal\""), "keys.distribution"));
  BOOST_TEST(contains(error_of("[runner]\nfault = \"disk\""), "runner.fault"));
  BOOST_TEST(contains(error_of("[runner]\nfault_mode = \"a b\""), "runner.fault_mode"));
  BOOST_TEST(contains(error_of("[runner]\nsystems = [\"squid\"]"), "runner.systems holds names"));
  BOOST_TEST(contains(error_of("[runner]\nsystems = []"), "runner.systems must be a non-empty"));
  BOOST_TEST(contains(error_of("[runner]\ngateway_l1 = 1"), "runner.gateway_l1 must be true or"));
  BOOST_TEST(contains(error_of("name = \"Bad Name\""), "name may hold only"));
  BOOST_TEST(contains(error_of("load = 5"), "load must be a table"));
  BOOST_TEST(contains(error_of("name = "), "t.toml: line 1"));
}

BOOST_AUTO_TEST_CASE(durations) {
  BOOST_TEST((parse_duration("500ms") == 500ms));
  BOOST_TEST((parse_duration("2s") == 2000ms));
  BOOST_TEST((parse_duration("1.5s") == 1500ms));
  BOOST_TEST((parse_duration("3m") == 180s));
  BOOST_TEST((parse_duration("1h") == 3600s));
  BOOST_TEST((parse_duration("0s") == 0ms));
  for (const char* bad : {"", "s", "5", "5x", "-1s", "1e3s", "ms", "5 s", "9999h"}) {
    BOOST_CHECK_THROW(parse_duration(bad), ScenarioError);
  }
}

BOOST_AUTO_TEST_CASE(missing_file_is_an_error) {
  BOOST_CHECK_THROW(load_scenario_file("/nonexistent/scenario.toml"), ScenarioError);
}

BOOST_AUTO_TEST_CASE(shipped_scenarios_parse) {
  for (const char* name :
       {"hot-hits", "hot-hits-256", "large-page", "zipf-site", "zipf-site-redis-only", "quota-walk",
        "memory-10k", "cold-storm", "cache-busters", "upstream-outage", "redis-outage", "soak",
        "refresh-day"}) {
    const std::string path = wg::test::source_dir() + "/bench/scenarios/" + name + ".toml";
    BOOST_TEST_CONTEXT(path) {
      Scenario s;
      BOOST_CHECK_NO_THROW(s = load_scenario_file(path));
      BOOST_TEST(s.name == name);
      BOOST_TEST(!s.description.empty());
    }
  }
}

// quota-walk is zipf-site plus the walker: the visitors' load and mix are zipf-site's, so that
// its baseline (zipf-site) is the same load without the walker.
BOOST_AUTO_TEST_CASE(quota_walk_is_zipf_site_plus_a_walker) {
  const std::string dir = wg::test::source_dir() + "/bench/scenarios/";
  const Scenario base = load_scenario_file(dir + "zipf-site.toml");
  const Scenario walk = load_scenario_file(dir + "quota-walk.toml");
  BOOST_TEST(walk.runner.baseline == "zipf-site");
  BOOST_TEST(base.walker.share == 0.0);
  BOOST_TEST(walk.walker.share > 0.0);
  BOOST_TEST(walk.walker.limit == 1u);
  BOOST_TEST(walk.walker.skip_step == 300u);
  BOOST_TEST(walk.walker.skip_max == 179700u);
  BOOST_TEST(walk.walker.widgets <= walk.runner.stub_widgets);  // known ids only
  BOOST_TEST((walk.load.mode == base.load.mode));
  BOOST_TEST(walk.load.connections == base.load.connections);
  BOOST_TEST((walk.load.duration == base.load.duration));
  BOOST_TEST((walk.load.warmup == base.load.warmup));
  BOOST_TEST(walk.keys.widgets == base.keys.widgets);
  BOOST_TEST(walk.keys.zipf_exponent == base.keys.zipf_exponent);
  BOOST_TEST(walk.mix.widget == base.mix.widget);
  BOOST_TEST(walk.mix.reviews == base.mix.reviews);
  BOOST_TEST(walk.mix.head == base.mix.head);
  BOOST_TEST((walk.reviews.limits == base.reviews.limits));
  BOOST_TEST(walk.reviews.max_pages == base.reviews.max_pages);
  BOOST_TEST(walk.reviews.page_exponent == base.reviews.page_exponent);
  BOOST_TEST(walk.reviews.typed == base.reviews.typed);
  BOOST_TEST(walk.runner.stub_widgets == base.runner.stub_widgets);
  BOOST_TEST((walk.runner.upstream_latency == base.runner.upstream_latency));
  BOOST_TEST(walk.seed == base.seed);
  BOOST_TEST(walk.pool == base.pool);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // scenario_test
