#include <boost/test/unit_test.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/metrics/process_metrics.hpp"

// The exposition the admin listener serves must pass `promtool check metrics` (syntax and
// Prometheus' naming lints). promtool comes with the test tools (deploy/install-deps.sh
// --test-tools); a missing promtool fails the test rather than skipping it.

using namespace wg::metrics;

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  BOOST_REQUIRE_MESSAGE(pipe != nullptr, "popen failed for: " << command);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) result.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// A file in a fresh temporary directory, removed with it.
class TempFile {
 public:
  TempFile() {
    char dir[] = "/tmp/wg-metrics-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(dir) != nullptr);
    dir_ = dir;
    path_ = dir_ + "/metrics.txt";
  }
  ~TempFile() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

void populate(GatewayMetrics& m) {
  const std::array<unsigned, 6> statuses = {200, 304, 404, 429, 504, 299};
  for (auto route : {Route::widget, Route::reviews, Route::healthz, Route::readyz, Route::other}) {
    for (auto cache :
         {CacheResult::hit, CacheResult::miss, CacheResult::collapsed, CacheResult::stale,
          CacheResult::derived, CacheResult::local, CacheResult::none}) {
      for (unsigned status : statuses) m.request(route, status, cache, 0.004);
    }
  }
  for (auto endpoint : {UpstreamEndpoint::widget, UpstreamEndpoint::reviews}) {
    m.upstream(endpoint, 200, UpstreamFailure::none, 0.2);
    m.upstream(endpoint, 0, UpstreamFailure::timeout, 10);
    m.upstream(endpoint, 503, UpstreamFailure::bad_status, 0.3);
  }
  m.cache_lookup(Tier::l1, true);
  m.cache_lookup(Tier::l2, false);
  m.coalesced_waiter();
  m.stale_served(StaleReason::while_revalidate);
  m.local_answer();
  m.derived_page();
  m.redis_error();
  m.redis_state(false);
  m.circuit_state(true);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(promtool_test)

BOOST_AUTO_TEST_CASE(full_gateway_exposition_passes_promtool) {
  const CommandResult which = run("command -v promtool 2>&1");
  BOOST_REQUIRE_MESSAGE(which.exit_code == 0,
                        "promtool not found on PATH; it is installed by "
                        "`deploy/install-deps.sh --test-tools` (Debian package prometheus)");

  Registry registry;
  ScrapeSources sources;
  sources.quota_used = [] { return 123.0; };
  sources.quota_limit = [] { return 1000.0; };
  sources.quota_remaining = [] { return 877.0; };
  sources.quota_mode = [] { return wg::quota::Mode::economy; };
  sources.l1_bytes = [] { return 1048576.0; };
  sources.l1_entries = [] { return 42.0; };
  sources.connections_open = [] { return 3.0; };
  sources.access_log_dropped = [] { return 0.0; };
  sources.output_pending_bytes = [] { return 262144.0; };
  sources.output_refused = [] { return 1.0; };
  sources.output_paused = [] { return 2.0; };
  sources.slow_readers_closed = [] { return 3.0; };
  sources.quota_unknown_limit = [] { return 50.0; };
  sources.quota_resets_at = [] { return 1798750800.0; };
  sources.quota_projected_month_end = [] { return 2000.0; };
  sources.l1_evictions = [] { return 4.0; };
  sources.ready = [] { return true; };
  sources.degraded = [] { return false; };
  GatewayMetrics metrics(registry, std::move(sources));
  register_process_metrics(registry);
  populate(metrics);
  metrics.config_loaded(1798000000.0);
  metrics.config_reload(false, 1798000001.0);
  // Extra series with awkward label values must still parse.
  registry
      .counter("wg_test_escapes_total", "Escaping check: \\ and\nnewline.",
               {{"value", "back\\slash \"quote\"\nnewline"}})
      .inc();

  const std::string text = registry.render();
  TempFile file;
  {
    std::ofstream out(file.path(), std::ios::binary);
    out << text;
  }
  const CommandResult check = run("promtool check metrics < '" + file.path() + "' 2>&1");
  BOOST_TEST_MESSAGE("promtool output: " << check.output);
  BOOST_TEST(check.exit_code == 0, "promtool check metrics failed:\n" << check.output);
  BOOST_TEST(check.output.empty(), "promtool reported problems:\n" << check.output);
}

BOOST_AUTO_TEST_SUITE_END()  // promtool_test
