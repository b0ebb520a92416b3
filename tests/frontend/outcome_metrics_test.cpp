#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>

#include "frontend/outcome_metrics.hpp"

using namespace wg;
using serving::StaleReason;

namespace {

constexpr StaleReason kStaleReasons[] = {StaleReason::while_revalidate, StaleReason::if_error,
                                         StaleReason::quota_exhausted, StaleReason::quota_economy,
                                         StaleReason::widget_paced};

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(outcome_metrics_test)

// What public_handler counts for an answer: its outcome's stale reason, none counting nothing.
BOOST_AUTO_TEST_CASE(a_fresh_answer_counts_no_stale_answer) {
  metrics::Registry registry;
  metrics::GatewayMetrics metrics(registry);
  metrics.stale_served(StaleReason::none);
  const std::string text = registry.render();
  BOOST_TEST(text.find("wg_stale_served_total{reason=\"\"}") == std::string::npos);
  for (StaleReason reason : kStaleReasons) {
    const std::string label(to_string(reason));
    BOOST_TEST(has_line(text, "wg_stale_served_total{reason=\"" + label + "\"} 0"), label);
  }
}

// Each reason has its own series, labelled as Cache-Status' detail spells it.
BOOST_AUTO_TEST_CASE(every_stale_reason_is_counted_under_its_own_label) {
  metrics::Registry registry;
  metrics::GatewayMetrics metrics(registry);
  for (StaleReason reason : kStaleReasons) {
    serving::Outcome outcome;
    outcome.detail = serving::Outcome::detail_for(serving::Outcome::Detail::none, reason);
    BOOST_TEST((outcome.stale() == reason), to_string(reason));
    BOOST_TEST(serving::detail_of(outcome.detail) == to_string(reason));
    metrics.stale_served(outcome.stale());
  }
  const std::string text = registry.render();
  for (StaleReason reason : kStaleReasons) {
    const std::string label(to_string(reason));
    BOOST_TEST(has_line(text, "wg_stale_served_total{reason=\"" + label + "\"} 1"), label);
  }
}

// A stale answer is "stale" whatever its reason, and wins over derived and local, as in
// Cache-Status.
BOOST_AUTO_TEST_CASE(stale_answers_are_told_apart_from_hits_whatever_the_reason) {
  using Detail = serving::Outcome::Detail;
  using Source = serving::Outcome::Source;
  serving::Served served;
  served.entry = std::make_shared<const cache::Entry>();
  for (StaleReason reason : kStaleReasons) {
    for (Detail kind : {Detail::none, Detail::derived, Detail::local}) {
      served.outcome.detail = serving::Outcome::detail_for(kind, reason);
      BOOST_TEST((frontend::cache_result_of(served) == metrics::CacheResult::stale),
                 to_string(reason));
    }
  }
  served.outcome.detail = Detail::none;
  BOOST_TEST((frontend::cache_result_of(served) == metrics::CacheResult::hit));
  served.outcome.detail = Detail::derived;
  BOOST_TEST((frontend::cache_result_of(served) == metrics::CacheResult::derived));
  served.outcome.detail = Detail::local;
  BOOST_TEST((frontend::cache_result_of(served) == metrics::CacheResult::local));
  served.outcome = {Source::upstream, true, Detail::none};
  BOOST_TEST((frontend::cache_result_of(served) == metrics::CacheResult::miss));
  served.outcome.source = Source::collapsed;
  BOOST_TEST((frontend::cache_result_of(served) == metrics::CacheResult::collapsed));
  served.entry.reset();
  BOOST_TEST((frontend::cache_result_of(served) == metrics::CacheResult::none));
}

BOOST_AUTO_TEST_SUITE_END()  // outcome_metrics_test
