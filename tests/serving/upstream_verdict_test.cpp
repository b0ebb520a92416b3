// classify(): every upstream status and failure, one row each, and what the fetcher does with
// it (store, store the negative answer, hold every worker, fail), the breaker's step, whether
// the unknown-id reservation is kept, and what the client is told.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "serving/upstream_verdict.hpp"
#include "widget_gateway/common/error.hpp"

using wg::errc;
using wg::serving::classify;
using wg::serving::UpstreamExchange;
using wg::serving::UpstreamVerdict;
using VerdictAction = UpstreamVerdict::Action;
using wg::api::Endpoint;
using namespace std::chrono_literals;

namespace {

const wg::WallTime kVerdictNow{std::chrono::seconds(1'780'000'000)};  // 2026-05-28T20:26:40Z
constexpr std::chrono::seconds kBackoff{60};

struct VerdictRow {
  std::string name;
  UpstreamExchange exchange;
  VerdictAction action;
  std::error_code error;  // {} for a stored answer
  std::error_code failure;
  bool healthy;
  std::chrono::seconds hold_for;
  bool unknown_widget;
};

UpstreamExchange answered(Endpoint endpoint, unsigned status, bool body_valid = false,
                          std::string_view retry_after = {}) {
  return {endpoint, {}, status, body_valid, retry_after};
}

UpstreamExchange failed_exchange(errc error) {
  return {Endpoint::widget, make_error_code(error), 0, false, {}};
}

std::error_code code(errc e) {
  return make_error_code(e);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(upstream_verdict_test)

BOOST_AUTO_TEST_CASE(every_status_and_failure) {
  const std::vector<VerdictRow> rows = {
      // The data.
      {"widget 200, valid",
       answered(Endpoint::widget, 200, true),
       VerdictAction::store,
       {},
       {},
       true,
       0s,
       false},
      {"reviews 200, valid",
       answered(Endpoint::reviews, 200, true),
       VerdictAction::store,
       {},
       {},
       true,
       0s,
       false},
      // Well-formed HTTP, broken body: upstream is failing.
      {"widget 200, invalid body", answered(Endpoint::widget, 200, false), VerdictAction::fail,
       code(errc::upstream_invalid_body), code(errc::upstream_invalid_body), false, 0s, false},
      {"reviews 200, invalid body", answered(Endpoint::reviews, 200, false), VerdictAction::fail,
       code(errc::upstream_invalid_body), code(errc::upstream_invalid_body), false, 0s, false},
      // Upstream does not know the widget: a negative entry, and the reservation is kept.
      {"widget 404",
       answered(Endpoint::widget, 404),
       VerdictAction::store_negative,
       {},
       {},
       true,
       0s,
       true},
      {"reviews 400",
       answered(Endpoint::reviews, 400),
       VerdictAction::store_negative,
       {},
       {},
       true,
       0s,
       true},
      // The same statuses on the other endpoint are a refusal of this request, upstream healthy.
      {"reviews 404",
       answered(Endpoint::reviews, 404),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       true,
       0s,
       false},
      {"widget 400",
       answered(Endpoint::widget, 400),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       true,
       0s,
       false},
      {"widget 401",
       answered(Endpoint::widget, 401),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       true,
       0s,
       false},
      {"widget 403",
       answered(Endpoint::widget, 403),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       true,
       0s,
       false},
      {"widget 204",
       answered(Endpoint::widget, 204),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       true,
       0s,
       false},
      {"widget 301",
       answered(Endpoint::widget, 301),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       true,
       0s,
       false},
      {"widget 304",
       answered(Endpoint::widget, 304),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       true,
       0s,
       false},
      // Upstream asks every worker to wait.
      {"429 with Retry-After seconds",
       answered(Endpoint::widget, 429, false, "30"),
       VerdictAction::hold,
       code(errc::upstream_rate_limited),
       {},
       true,
       30s,
       false},
      {"429 with a Retry-After date",
       answered(Endpoint::reviews, 429, false, "Thu, 28 May 2026 20:28:40 GMT"),
       VerdictAction::hold,
       code(errc::upstream_rate_limited),
       {},
       true,
       120s,
       false},
      {"429 without Retry-After: the configured back-off",
       answered(Endpoint::widget, 429),
       VerdictAction::hold,
       code(errc::upstream_rate_limited),
       {},
       true,
       kBackoff,
       false},
      {"429 with an unreadable Retry-After: the back-off",
       answered(Endpoint::widget, 429, false, "soon"),
       VerdictAction::hold,
       code(errc::upstream_rate_limited),
       {},
       true,
       kBackoff,
       false},
      {"503 with Retry-After",
       answered(Endpoint::widget, 503, false, "5"),
       VerdictAction::hold,
       code(errc::upstream_unavailable),
       {},
       true,
       5s,
       false},
      // A 503 that names no wait is upstream failing.
      {"503 without Retry-After",
       answered(Endpoint::widget, 503),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       false,
       0s,
       false},
      {"500",
       answered(Endpoint::widget, 500),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       false,
       0s,
       false},
      {"502",
       answered(Endpoint::reviews, 502),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       false,
       0s,
       false},
      {"504",
       answered(Endpoint::widget, 504),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       false,
       0s,
       false},
      {"500 with Retry-After: still failing",
       answered(Endpoint::widget, 500, false, "5"),
       VerdictAction::fail,
       code(errc::upstream_bad_status),
       {},
       false,
       0s,
       false},
      // No response at all.
      {"connect failed", failed_exchange(errc::upstream_connect_failed), VerdictAction::fail,
       code(errc::upstream_connect_failed), code(errc::upstream_connect_failed), false, 0s, false},
      {"timeout", failed_exchange(errc::upstream_timeout), VerdictAction::fail, code(errc::upstream_timeout),
       code(errc::upstream_timeout), false, 0s, false},
      {"closed early", failed_exchange(errc::upstream_closed), VerdictAction::fail, code(errc::upstream_closed),
       code(errc::upstream_closed), false, 0s, false},
      {"TLS", failed_exchange(errc::upstream_tls), VerdictAction::fail, code(errc::upstream_tls),
       code(errc::upstream_tls), false, 0s, false},
  };
  for (const VerdictRow& row : rows) {
    BOOST_TEST_CONTEXT(row.name) {
      const UpstreamVerdict verdict = classify(row.exchange, kVerdictNow, kBackoff);
      BOOST_TEST(static_cast<int>(verdict.action) == static_cast<int>(row.action));
      BOOST_TEST(verdict.error == row.error);
      BOOST_TEST(verdict.failure == row.failure);
      BOOST_TEST(verdict.upstream_healthy == row.healthy);
      BOOST_TEST(verdict.hold_for.count() == row.hold_for.count());
      BOOST_TEST(verdict.unknown_widget == row.unknown_widget);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()  // upstream_verdict_test
