#include <boost/test/unit_test.hpp>

#include <ostream>
#include <string>

#include "widget_gateway/common/error.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"

using namespace wg::metrics;

namespace wg::metrics {
// For Boost.Test's messages.
std::ostream& operator<<(std::ostream& os, UpstreamFailure f) {
  return os << to_string(f);
}
}  // namespace wg::metrics
namespace wg::cache {
std::ostream& operator<<(std::ostream& os, StaleReason r) {
  return os << to_string(r);
}
}  // namespace wg::cache

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gateway_metrics_test)

BOOST_AUTO_TEST_CASE(requests_by_route_status_and_cache) {
  Registry registry;
  GatewayMetrics metrics(registry);
  metrics.request(Route::widget, 200, CacheResult::hit, 0.002);
  metrics.request(Route::widget, 200, CacheResult::hit, 0.003);
  metrics.request(Route::reviews, 504, CacheResult::none, 10.5);
  metrics.request(Route::other, 418, CacheResult::none, 0.0001);  // not in the list
  const std::string text = registry.render();
  BOOST_TEST(has_line(text, R"(wg_requests_total{route="widget",status="200",cache="hit"} 2)"));
  BOOST_TEST(has_line(text, R"(wg_requests_total{route="reviews",status="504",cache="none"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_requests_total{route="other",status="other",cache="none"} 1)"));
  // Unused combinations are not listed.
  BOOST_TEST(text.find(R"(cache="miss")") == std::string::npos);
  BOOST_TEST(has_line(text, R"(wg_request_duration_seconds_bucket{route="widget",le="0.0025"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_request_duration_seconds_count{route="widget"} 2)"));
  BOOST_TEST(has_line(text, R"(wg_request_duration_seconds_bucket{route="reviews",le="10"} 0)"));
  BOOST_TEST(has_line(text, R"(wg_request_duration_seconds_bucket{route="reviews",le="+Inf"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_request_duration_seconds_count{route="healthz"} 0)"));
}

BOOST_AUTO_TEST_CASE(status_slots) {
  for (std::size_t i = 0; i < kKnownStatuses.size(); ++i) {
    BOOST_TEST(GatewayMetrics::status_slot(kKnownStatuses[i]) == i);
  }
  BOOST_TEST(GatewayMetrics::status_slot(0) == kKnownStatuses.size());
  BOOST_TEST(GatewayMetrics::status_slot(299) == kKnownStatuses.size());
}

BOOST_AUTO_TEST_CASE(upstream_by_endpoint_status_and_failure) {
  Registry registry;
  GatewayMetrics metrics(registry);
  metrics.upstream(UpstreamEndpoint::widget, 200, UpstreamFailure::none, 0.1);
  metrics.upstream(UpstreamEndpoint::widget, 0, UpstreamFailure::timeout, 10);
  metrics.upstream(UpstreamEndpoint::reviews, 503,
                   wg::make_error_code(wg::errc::upstream_bad_status), 0.2);
  metrics.upstream(UpstreamEndpoint::reviews, 200, std::make_error_code(std::errc::io_error), 0.2);
  metrics.upstream(UpstreamEndpoint::reviews, 0,
                   wg::make_error_code(wg::errc::upstream_connect_failed), 0.01);
  const std::string text = registry.render();
  BOOST_TEST(has_line(text, R"(wg_upstream_requests_total{endpoint="widget",status="200"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_upstream_requests_total{endpoint="widget",status="none"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_upstream_requests_total{endpoint="reviews",status="503"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_upstream_requests_total{endpoint="reviews",status="200"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_upstream_failures_total{endpoint="widget",reason="timeout"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_upstream_failures_total{endpoint="widget",reason="connect"} 0)"));
  BOOST_TEST(
      has_line(text, R"(wg_upstream_failures_total{endpoint="reviews",reason="bad_status"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_upstream_failures_total{endpoint="reviews",reason="other"} 1)"));
  BOOST_TEST(
      has_line(text, R"(wg_upstream_failures_total{endpoint="reviews",reason="connect"} 1)"));
  BOOST_TEST(text.find(R"(reason="none")") == std::string::npos);
  BOOST_TEST(has_line(text, R"(wg_upstream_duration_seconds_count{endpoint="reviews"} 3)"));
  BOOST_TEST(has_line(text, R"(wg_upstream_duration_seconds_sum{endpoint="widget"} 10.1)"));
}

BOOST_AUTO_TEST_CASE(failure_and_reason_mappings) {
  BOOST_TEST(upstream_failure_from(wg::make_error_code(wg::errc::upstream_tls)) ==
             UpstreamFailure::tls);
  BOOST_TEST(upstream_failure_from(wg::make_error_code(wg::errc::upstream_rate_limited)) ==
             UpstreamFailure::rate_limited);
  BOOST_TEST(upstream_failure_from(std::make_error_code(std::errc::io_error)) ==
             UpstreamFailure::other);
  BOOST_TEST(upstream_failure_from(std::error_code{}) == UpstreamFailure::none);
  BOOST_TEST(upstream_failure_from(wg::make_error_code(wg::errc::upstream_timeout)) ==
             UpstreamFailure::timeout);
  BOOST_TEST(upstream_failure_from(wg::make_error_code(wg::errc::upstream_invalid_body)) ==
             UpstreamFailure::invalid_body);
  BOOST_TEST(upstream_failure_from(wg::make_error_code(wg::errc::redis_down)) ==
             UpstreamFailure::other);
  BOOST_TEST(upstream_failure_from(std::make_error_code(std::errc::connection_refused)) ==
             UpstreamFailure::other);
}

BOOST_AUTO_TEST_CASE(each_stale_reason_has_its_own_series) {
  Registry registry;
  GatewayMetrics metrics(registry);
  const std::pair<StaleReason, std::string> reasons[] = {
      {StaleReason::while_revalidate, "stale-while-revalidate"},
      {StaleReason::if_error, "stale-if-error"},
      {StaleReason::quota_exhausted, "quota-exhausted"},
      {StaleReason::quota_economy, "quota-economy"},
      {StaleReason::widget_paced, "widget-paced"},
  };
  // The k-th reason counted k+1 times: no two reasons share a series.
  for (std::size_t k = 0; k < std::size(reasons); ++k) {
    for (std::size_t n = 0; n <= k; ++n) metrics.stale_served(reasons[k].first);
  }
  const std::string text = registry.render();
  for (std::size_t k = 0; k < std::size(reasons); ++k) {
    BOOST_TEST(to_string(reasons[k].first) == reasons[k].second);
    BOOST_TEST(has_line(text, R"(wg_stale_served_total{reason=")" + reasons[k].second + "\"} " +
                                  std::to_string(k + 1)),
               reasons[k].second);
  }
  BOOST_TEST(text.find(R"(wg_stale_served_total{reason="other"})") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(each_refusal_reason_has_its_own_series_in_a_fixed_label_set) {
  Registry registry;
  GatewayMetrics metrics(registry);
  // The documented label set (README, "Metrics and health"), in the enum's order.
  const std::string labels[] = {"client_rate",           "client_unknown_rate",  "unknown_budget",
                                "upstream_rate_limited", "upstream_unavailable", "circuit_open",
                                "quota_exhausted",       "quota_unavailable",    "upstream_busy",
                                "widget_paced",          "fetch_waiters_full",   "overloaded"};
  BOOST_REQUIRE_EQUAL(std::size(labels), kRefusalReasons);
  const std::string before = registry.render();
  for (std::size_t k = 0; k < kRefusalReasons; ++k) {
    // Registered at 0 before anything is refused, so rate() sees the first one.
    BOOST_TEST(has_line(before, "wg_refusals_total{reason=\"" + labels[k] + "\"} 0"), labels[k]);
    for (std::size_t n = 0; n <= k; ++n) metrics.refused(static_cast<RefusalReason>(k));
  }
  const std::string text = registry.render();
  for (std::size_t k = 0; k < kRefusalReasons; ++k) {
    BOOST_TEST(to_string(static_cast<RefusalReason>(k)) == labels[k]);
    BOOST_TEST(
        has_line(text, "wg_refusals_total{reason=\"" + labels[k] + "\"} " + std::to_string(k + 1)),
        labels[k]);
  }
}

BOOST_AUTO_TEST_CASE(cache_and_state_metrics) {
  Registry registry;
  GatewayMetrics metrics(registry);
  metrics.cache_lookup(Tier::l1, true);
  metrics.cache_lookup(Tier::l1, false);
  metrics.cache_lookup(Tier::l2, false);
  metrics.coalesced_waiter();
  metrics.coalesced_waiter();
  metrics.stale_served(StaleReason::if_error);
  metrics.stale_served(StaleReason::quota_exhausted);
  metrics.local_answer();
  metrics.derived_page();
  metrics.redis_error();
  metrics.redis_error(wg::redis::ErrorKind::readonly);
  metrics.redis_state(true);
  metrics.circuit_state(true);
  metrics.circuit_state(false);
  const std::string text = registry.render();
  BOOST_TEST(has_line(text, R"(wg_cache_lookups_total{tier="l1",result="hit"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_cache_lookups_total{tier="l1",result="miss"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_cache_lookups_total{tier="l2",result="hit"} 0)"));
  BOOST_TEST(has_line(text, R"(wg_cache_lookups_total{tier="l2",result="miss"} 1)"));
  BOOST_TEST(has_line(text, "wg_coalesced_waiters_total 2"));
  BOOST_TEST(has_line(text, R"(wg_stale_served_total{reason="stale-if-error"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_stale_served_total{reason="quota-exhausted"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_stale_served_total{reason="stale-while-revalidate"} 0)"));
  BOOST_TEST(has_line(text, "wg_local_answers_total 1"));
  BOOST_TEST(has_line(text, "wg_derived_pages_total 1"));
  BOOST_TEST(has_line(text, R"(wg_redis_errors_total{kind="other"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_redis_errors_total{kind="readonly"} 1)"));
  BOOST_TEST(has_line(text, "wg_redis_up 1"));
  BOOST_TEST(has_line(text, "wg_upstream_circuit_open 0"));
  BOOST_TEST(has_line(text, std::string("wg_build_info{version=\"") + WG_VERSION + "\"} 1"));
  // No sources given: nothing read at scrape time is exported.
  BOOST_TEST(text.find("wg_quota_") == std::string::npos);
  BOOST_TEST(text.find("wg_connections_open") == std::string::npos);
  BOOST_TEST(text.find("wg_output_") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(scrape_sources_are_read_at_render) {
  Registry registry;
  double used = 10;
  wg::quota::Mode mode = wg::quota::Mode::normal;
  ScrapeSources sources;
  sources.quota_used = [&] { return used; };
  sources.quota_limit = [] { return 100.0; };
  sources.quota_remaining = [&] { return 100 - used; };
  sources.quota_mode = [&] { return mode; };
  sources.l1_bytes = [] { return 4096.0; };
  sources.l1_entries = [] { return 3.0; };
  sources.connections_open = [] { return 7.0; };
  sources.access_log_dropped = [] { return 5.0; };
  sources.output_pending_bytes = [] { return 65536.0; };
  sources.output_refused = [] { return 2.0; };
  sources.output_paused = [] { return 4.0; };
  sources.slow_readers_closed = [] { return 6.0; };
  sources.quota_unknown_limit = [] { return 5.0; };
  sources.quota_resets_at = [] { return 1798750800.0; };
  sources.quota_projected_month_end = [&] { return used * 3; };
  sources.l1_evictions = [] { return 8.0; };
  bool ready = true;
  sources.ready = [&] { return ready; };
  sources.degraded = [&] { return !ready; };
  GatewayMetrics metrics(registry, std::move(sources));

  std::string text = registry.render();
  BOOST_TEST(has_line(text, "wg_quota_unknown_limit 5"));
  BOOST_TEST(has_line(text, "wg_quota_reset_timestamp_seconds 1798750800"));
  BOOST_TEST(has_line(text, "wg_quota_projected_month_end 30"));
  BOOST_TEST(has_line(text, R"(wg_cache_evictions_total{tier="l1"} 8)"));
  BOOST_TEST(has_line(text, "wg_ready 1"));
  BOOST_TEST(has_line(text, "wg_degraded 0"));
  BOOST_TEST(has_line(text, "wg_quota_used 10"));
  BOOST_TEST(has_line(text, "wg_quota_limit 100"));
  BOOST_TEST(has_line(text, "wg_quota_remaining 90"));
  BOOST_TEST(has_line(text, R"(wg_quota_mode{mode="normal"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_quota_mode{mode="economy"} 0)"));
  BOOST_TEST(has_line(text, R"(wg_cache_bytes{tier="l1"} 4096)"));
  BOOST_TEST(has_line(text, R"(wg_cache_entries{tier="l1"} 3)"));
  BOOST_TEST(has_line(text, "wg_connections_open 7"));
  BOOST_TEST(has_line(text, "wg_access_log_dropped_total 5"));
  BOOST_TEST(has_line(text, "wg_output_pending_bytes 65536"));
  BOOST_TEST(has_line(text, "wg_output_refused_total 2"));
  BOOST_TEST(has_line(text, "wg_output_paused_total 4"));
  BOOST_TEST(has_line(text, R"(wg_connections_closed_total{reason="slow_reader"} 6)"));

  used = 95;
  mode = wg::quota::Mode::economy;
  text = registry.render();
  BOOST_TEST(has_line(text, "wg_quota_used 95"));
  BOOST_TEST(has_line(text, "wg_quota_remaining 5"));
  BOOST_TEST(has_line(text, R"(wg_quota_mode{mode="normal"} 0)"));
  BOOST_TEST(has_line(text, R"(wg_quota_mode{mode="economy"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_quota_mode{mode="exhausted"} 0)"));
  BOOST_TEST(has_line(text, "wg_quota_projected_month_end 285"));
  ready = false;
  text = registry.render();
  BOOST_TEST(has_line(text, "wg_ready 0"));
  BOOST_TEST(has_line(text, "wg_degraded 1"));
}

BOOST_AUTO_TEST_CASE(config_reloads_are_counted_by_result) {
  Registry registry;
  GatewayMetrics metrics(registry);
  metrics.config_loaded(1000);
  std::string text = registry.render();
  BOOST_TEST(has_line(text, R"(wg_config_reloads_total{result="success"} 0)"));
  BOOST_TEST(has_line(text, R"(wg_config_reloads_total{result="failure"} 0)"));
  BOOST_TEST(has_line(text, "wg_config_last_reload_success_timestamp_seconds 1000"));
  metrics.config_reload(true, 2000);
  metrics.config_reload(false, 3000);  // a rejected file keeps the last success's time
  metrics.config_reload(false, 4000);
  text = registry.render();
  BOOST_TEST(has_line(text, R"(wg_config_reloads_total{result="success"} 1)"));
  BOOST_TEST(has_line(text, R"(wg_config_reloads_total{result="failure"} 2)"));
  BOOST_TEST(has_line(text, "wg_config_last_reload_success_timestamp_seconds 2000"));
}

BOOST_AUTO_TEST_SUITE_END()  // gateway_metrics_test
