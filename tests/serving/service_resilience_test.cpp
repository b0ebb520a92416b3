// Stale serving, the circuit breaker and upstream's 429, with the clock moved across the
// freshness windows of test_config(): fresh 1h, stale-while-revalidate 10min, stale-if-error
// 24h.
#include <boost/test/unit_test.hpp>

#include "frontend/response_builder.hpp"
#include "service_fixture.hpp"
#include "widget_gateway/common/error.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;
using State = upstream::CircuitBreaker::State;

BOOST_AUTO_TEST_SUITE(service_resilience_test)

BOOST_AUTO_TEST_SUITE(resilience)

BOOST_AUTO_TEST_CASE(expired_entry_and_upstream_500_serve_stale_if_error) {
  ServiceFixture f;
  Served fresh = f.serve(f.widget(0));
  BOOST_REQUIRE(fresh.ok());

  f.clock.advance(1h + 11min);  // past fresh and past stale-while-revalidate
  f.faults().set(stub::FaultMode::status500, 1, stub::FaultEndpoint::any);
  Served stale = f.serve(f.widget(0));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::if_error);
  BOOST_TEST(stale.upstream_error == make_error_code(errc::upstream_bad_status));
  BOOST_TEST(stale.entry->body == fresh.entry->body);
  BOOST_TEST(cache_status(stale) == "widget-gateway; fwd=stale; ttl=-660; detail=stale-if-error");
  BOOST_TEST(f.upstream_calls() == 2u);

  // Upstream back: the next request refreshes it.
  Served refreshed = f.serve(f.widget(0));
  BOOST_REQUIRE(refreshed.ok());
  BOOST_TEST(refreshed.outcome.stale() == StaleReason::none);
  BOOST_TEST(refreshed.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(f.upstream_calls() == 3u);
}

BOOST_AUTO_TEST_CASE(within_swr_stale_is_served_at_once_and_refreshed_once_in_background) {
  ServiceFixture f;
  Served fresh = f.serve(f.widget(0));
  BOOST_REQUIRE(fresh.ok());

  f.clock.advance(1h + 1min);  // inside stale-while-revalidate
  f.faults().set_latency(300ms);
  auto results = f.serve_concurrently(f.widget(0), 20);
  for (const Served& served : results) {
    BOOST_REQUIRE(served.ok());
    // The old copy, not the one being fetched: nobody waited for the refresh.
    BOOST_TEST((served.entry->stored_at == fresh.entry->stored_at));
    BOOST_TEST(served.outcome.stale() == StaleReason::while_revalidate);
    BOOST_TEST(served.outcome.source == Outcome::Source::cache);
  }
  BOOST_TEST(cache_status(results.front()) ==
             "widget-gateway; hit; ttl=-60; detail=stale-while-revalidate");
  BOOST_REQUIRE(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 2u);  // exactly one background refresh

  Served after = f.serve(f.widget(0));
  BOOST_REQUIRE(after.ok());
  BOOST_TEST(after.outcome.stale() == StaleReason::none);
  BOOST_TEST(after.outcome.source == Outcome::Source::cache);
  BOOST_TEST((after.entry->stored_at > fresh.entry->stored_at));
  BOOST_TEST(f.upstream_calls() == 2u);
}

BOOST_AUTO_TEST_CASE(a_failed_background_refresh_keeps_the_stale_copy) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  f.clock.advance(1h + 1min);
  f.faults().set(stub::FaultMode::status500, 1, stub::FaultEndpoint::any);
  Served stale = f.serve(f.widget(0));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::while_revalidate);
  BOOST_REQUIRE(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 2u);
  Served still = f.serve(f.widget(0));  // still within swr: served, and refreshed again
  BOOST_REQUIRE(still.ok());
  BOOST_TEST(still.outcome.stale() == StaleReason::while_revalidate);
  BOOST_REQUIRE(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 3u);
  BOOST_TEST(f.serve(f.widget(0)).outcome.stale() == StaleReason::none);
}

BOOST_AUTO_TEST_CASE(with_upstream_down_every_cached_key_is_still_served) {
  ServiceFixture f;
  std::vector<api::ApiRequest> keys;
  for (std::size_t i = 0; i < 8; ++i) keys.push_back(f.widget(i));
  keys.push_back(f.reviews(0, 20));        // derived from window 0
  keys.push_back(f.reviews(0, 300, 300));  // a window itself
  keys.push_back(f.reviews(2, 5, 3));
  std::vector<std::string> bodies;
  for (const auto& key : keys) {
    Served served = f.serve(key);
    BOOST_REQUIRE(served.ok());
    bodies.push_back(served.entry->body);
  }

  f.stop_stub();
  for (std::chrono::minutes age : {std::chrono::minutes(90), std::chrono::minutes(23 * 60)}) {
    f.clock.set_wall(default_start() + age);
    for (int from_redis = 0; from_redis < 2; ++from_redis) {
      if (from_redis) f.main().l1.clear();
      for (std::size_t i = 0; i < keys.size(); ++i) {
        BOOST_TEST_CONTEXT("key " << i << " age " << age.count() << "min redis " << from_redis) {
          Served served = f.serve(keys[i]);
          BOOST_REQUIRE(served.ok());
          BOOST_TEST(served.outcome.stale() == StaleReason::if_error);
          BOOST_TEST(served.entry->body == bodies[i]);
        }
      }
    }
  }
  // The failures opened the circuit on the way; that changed nothing for cached keys.
  BOOST_TEST((f.main().breaker.state() != State::closed));

  // Past stale-if-error (1h fresh + 24h): nothing left to serve.
  f.clock.set_wall(default_start() + 25h + 1min);
  Served gone = f.serve(keys.front());
  BOOST_TEST(!gone.ok());
  BOOST_TEST(gone.error == api::ErrorCode::upstream_error);
}

BOOST_AUTO_TEST_CASE(the_circuit_opens_after_five_consecutive_failures_not_one_and_half_opens) {
  ServiceFixture f;
  auto& breaker = f.main().breaker;
  f.faults().set(stub::FaultMode::status500, std::nullopt, stub::FaultEndpoint::any);

  for (std::size_t i = 0; i < 5; ++i) {
    Served failed = f.serve(f.widget(i));
    BOOST_TEST(!failed.ok());
    BOOST_TEST(failed.error == api::ErrorCode::upstream_error);
    // A real failure: no refusal of the gateway's own, nothing to wait for.
    BOOST_TEST(!failed.refusal.has_value());
    BOOST_TEST(failed.retry_after.count() == 0);
    BOOST_TEST(f.upstream_calls() == i + 1);
    BOOST_TEST((breaker.state() == (i < 4 ? State::closed : State::open)));
  }
  BOOST_TEST(breaker.consecutive_failures() >= 5u);

  // Open: the 6th request does not reach upstream.
  Served rejected = f.serve(f.widget(5));
  BOOST_TEST(!rejected.ok());
  BOOST_TEST(rejected.error == api::ErrorCode::upstream_error);
  BOOST_TEST(rejected.upstream_error == make_error_code(errc::circuit_open));
  BOOST_TEST(f.upstream_calls() == 5u);
  // Its own reason and words, and the pause's rest as Retry-After (30 s, counting down).
  BOOST_TEST((rejected.refusal == metrics::RefusalReason::circuit_open));
  BOOST_TEST(std::string(rejected.message).find("upstream circuit open") != std::string::npos);
  BOOST_TEST(rejected.retry_after.count() >= 1);
  BOOST_TEST(rejected.retry_after.count() <= 30);
  f.clock.advance(10s);
  Served later = f.serve(f.widget(5));
  BOOST_TEST((later.refusal == metrics::RefusalReason::circuit_open));
  BOOST_TEST(later.retry_after.count() >= 1);
  BOOST_TEST(later.retry_after.count() <= 20);
  BOOST_TEST(f.upstream_calls() == 5u);

  // After the pause one probe goes; its failure opens the circuit again.
  f.clock.advance(31s);
  BOOST_TEST(!f.serve(f.widget(5)).ok());
  BOOST_TEST(f.upstream_calls() == 6u);
  BOOST_TEST((breaker.state() == State::open));
  BOOST_TEST(!f.serve(f.widget(6)).ok());
  BOOST_TEST(f.upstream_calls() == 6u);

  // The next probe succeeds and closes it.
  f.clock.advance(31s);
  f.faults().set(stub::FaultMode::none, std::nullopt, stub::FaultEndpoint::any);
  Served probe = f.serve(f.widget(6));
  BOOST_REQUIRE(probe.ok());
  BOOST_TEST((breaker.state() == State::closed));
  BOOST_TEST(f.serve(f.widget(7)).ok());
  BOOST_TEST(f.upstream_calls() == 8u);
}

BOOST_AUTO_TEST_CASE(failures_interrupted_by_a_success_never_open_the_circuit) {
  ServiceFixture f;
  for (std::size_t round = 0; round < 3; ++round) {
    f.faults().set(stub::FaultMode::status503, 4, stub::FaultEndpoint::any);
    for (std::size_t j = 0; j < 4; ++j) BOOST_TEST(!f.serve(f.widget(round * 5 + j)).ok());
    BOOST_TEST((f.main().breaker.state() == State::closed));
    BOOST_TEST(f.serve(f.widget(round * 5 + 4)).ok());  // resets the consecutive count
  }
  BOOST_TEST((f.main().breaker.state() == State::closed));
  BOOST_TEST(f.upstream_calls() == 15u);
}

BOOST_AUTO_TEST_CASE(upstream_429_backs_off_and_serves_stale) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_REQUIRE(f.serve(f.widget(1)).ok());
  f.clock.advance(2h);
  f.faults().set(stub::FaultMode::status429, 1, stub::FaultEndpoint::any);

  Served stale = f.serve(f.widget(0));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::if_error);
  BOOST_TEST(stale.upstream_error == make_error_code(errc::upstream_rate_limited));
  BOOST_TEST(f.upstream_calls() == 3u);
  BOOST_TEST(f.main().fetcher.refusal() == errc::upstream_rate_limited);
  BOOST_TEST((f.main().breaker.state() == State::closed));  // 429 is not upstream failing

  // While backing off nothing is sent: stale copies are served, cold keys fail fast.
  BOOST_TEST(f.serve(f.widget(0)).outcome.stale() == StaleReason::if_error);
  BOOST_TEST(f.serve(f.widget(1)).outcome.stale() == StaleReason::if_error);
  Served cold = f.serve(f.widget(2));
  BOOST_TEST(!cold.ok());
  BOOST_TEST(cold.upstream_error == make_error_code(errc::upstream_rate_limited));
  BOOST_TEST(f.upstream_calls() == 3u);

  // Upstream's Retry-After (the stub's 1s, not the 60s default) over, it is asked again.
  f.clock.advance(2s);
  BOOST_TEST(!f.main().fetcher.refusal());
  Served refreshed = f.serve(f.widget(0));
  BOOST_REQUIRE(refreshed.ok());
  BOOST_TEST(refreshed.outcome.stale() == StaleReason::none);
  BOOST_TEST(f.upstream_calls() == 4u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // service_resilience_test
