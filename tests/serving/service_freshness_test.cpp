// The daily refresh, trusted and paid once (docs/freshness.md): last-known-good holds on
// glitches, the guard counting a fetch when it starts, soft purges, and the empty review block,
// with a real redis-server and the stub upstream; time is the fixture's ManualClock.
#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include <string>
#include <vector>

#include "service_fixture.hpp"
#include "widget_gateway/api/keys.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;

namespace {

// The reviews in a body (a JSON array of objects).
std::size_t reviews_in(const Served& served) {
  simdjson::dom::parser parser;
  simdjson::dom::array reviews;
  if (!served.ok() || parser.parse(served.entry->body).get_array().get(reviews)) return 0;
  return reviews.size();
}

std::uint64_t total_in(const Served& served) {
  simdjson::dom::parser parser;
  simdjson::dom::element widget;
  if (!served.ok() || parser.parse(served.entry->body).get(widget)) return 999999;
  std::uint64_t total = 999999;
  if (widget["totalReviewAmount"].get_uint64().get(total)) return 999999;
  return total;
}

std::string widget_id(ServiceFixture& f, std::size_t index) {
  return f.widget(index).widget_id;
}

// The fixture has no purge subscriber: what it would do on this instance after a purge.
void drop_widget_from_l1(ServiceFixture& f, std::size_t index) {
  f.main().l1.erase_prefix(api::widget_key_prefix(widget_id(f, index)));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(service_freshness_test)

BOOST_AUTO_TEST_SUITE(last_known_good)

BOOST_AUTO_TEST_CASE(widget_data_falling_to_zero_is_held_back_until_confirmed) {
  ServiceFixture f;
  // Widget 0: 700 reviews. Its data and a page past the first window are cached.
  Served widget = f.serve(f.widget(0));
  BOOST_REQUIRE(widget.ok());
  BOOST_TEST(total_in(widget) == 700u);
  Served page = f.serve(f.reviews(0, 20, 400));
  BOOST_TEST(reviews_in(page) == 20u);
  BOOST_TEST(reviews_in(f.serve(f.reviews(0, 20, 690))) == 10u);

  // Past freshness and the stale-while-revalidate window, upstream answers well-formed
  // nonsense: every count 0, every page [].
  f.clock.advance(1h + 15min);
  f.faults().set(stub::FaultMode::empty_data, std::nullopt, stub::FaultEndpoint::any);
  const std::uint64_t before = f.upstream_calls();
  Served held = f.serve(f.widget(0));
  BOOST_REQUIRE(held.ok());
  BOOST_TEST(f.upstream_calls() == before + 1);
  BOOST_TEST(total_in(held) == 700u);  // the adopted copy, not the glitch
  BOOST_TEST(cache_status(held) ==
             "widget-gateway; fwd=uri-miss; stored; ttl=600; detail=unconfirmed");
  BOOST_REQUIRE(held.entry->hold.has_value());
  BOOST_TEST(!held.entry->hold->provisional);

  // Visitors keep the widget's reviews: the windows' empty answers are held back too, the pages
  // are cut from the copies kept, and the proof (from the held copy) answers no page of the 700
  // with [].
  Served after = f.serve(f.reviews(0, 20, 400));
  BOOST_TEST(reviews_in(after) == 20u);
  BOOST_TEST(cache_status(after).find("detail=unconfirmed") != std::string::npos);
  Served far = f.serve(f.reviews(0, 20, 690));
  BOOST_TEST(reviews_in(far) == 10u);

  // No further upstream request for the widget data until confirm_after (10 min).
  f.clock.advance(9min);
  const std::uint64_t during = f.upstream_calls();
  Served still = f.serve(f.widget(0));
  BOOST_TEST(total_in(still) == 700u);
  BOOST_TEST(cache_status(still) == "widget-gateway; hit; ttl=60; detail=unconfirmed");
  BOOST_TEST(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == during);

  // Confirmed: the next answer after confirm_after says 0 again, and is adopted.
  f.clock.advance(2min);
  Served confirming = f.serve(f.widget(0));  // stale in swr: served, and refreshed
  BOOST_TEST(total_in(confirming) == 700u);
  BOOST_TEST(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == during + 1);
  Served adopted = f.serve(f.widget(0));
  BOOST_TEST(total_in(adopted) == 0u);
  BOOST_TEST(!adopted.entry->hold.has_value());
  BOOST_TEST(cache_status(adopted) == "widget-gateway; hit; ttl=3600");
  // Now the adopted data proves the pages empty (the windows' holds ended with it).
  Served empty = f.serve(f.reviews(0, 20, 400));
  BOOST_TEST(empty.ok());
  BOOST_TEST(empty.entry->body == "[]");
  BOOST_TEST(cache_status(empty).find("detail=local") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_answer_that_restores_the_data_ends_the_hold) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  f.clock.advance(1h + 15min);
  f.faults().set(stub::FaultMode::empty_data, 1, stub::FaultEndpoint::widget);
  Served held = f.serve(f.widget(0));
  BOOST_TEST(held.entry->hold.has_value());
  // The glitch is over by the confirmation: the answer restores the data and is adopted.
  f.clock.advance(11min);
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_TEST(f.refreshes_done());
  Served restored = f.serve(f.widget(0));
  BOOST_TEST(total_in(restored) == 700u);
  BOOST_TEST(!restored.entry->hold.has_value());
  BOOST_TEST(cache_status(restored) == "widget-gateway; hit; ttl=3600");
}

BOOST_AUTO_TEST_CASE(a_window_coming_back_empty_is_held_back) {
  ServiceFixture f;
  Served window = f.serve(f.reviews(0, 300, 0));
  BOOST_TEST(reviews_in(window) == 300u);
  Served page = f.serve(f.reviews(0, 20, 40));
  BOOST_TEST(reviews_in(page) == 20u);
  f.clock.advance(1h + 15min);
  f.faults().set(stub::FaultMode::empty_data, std::nullopt, stub::FaultEndpoint::reviews);
  Served held = f.serve(f.reviews(0, 300, 0));
  BOOST_TEST(reviews_in(held) == 300u);
  BOOST_TEST(cache_status(held) ==
             "widget-gateway; fwd=uri-miss; stored; ttl=600; detail=unconfirmed");
  // The pages cut from it keep their reviews, marked the same way.
  Served cut = f.serve(f.reviews(0, 20, 40));
  BOOST_TEST(reviews_in(cut) == 20u);
  BOOST_TEST(cache_status(cut).find("detail=unconfirmed") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_window_without_a_copy_is_judged_by_the_widget_data) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());  // 700 reviews: window 300 holds 300
  f.faults().set(stub::FaultMode::empty_data, std::nullopt, stub::FaultEndpoint::reviews);
  Served window = f.serve(f.reviews(0, 300, 300));
  // Nothing adopted to keep: the answer itself is served, marked, and proves nothing.
  BOOST_REQUIRE(window.ok());
  BOOST_TEST(window.entry->body == "[]");
  BOOST_REQUIRE(window.entry->hold.has_value());
  BOOST_TEST(window.entry->hold->provisional);
  BOOST_TEST(cache_status(window).find("detail=unconfirmed") != std::string::npos);
  // Not asked again before confirm_after; then adopted.
  const std::uint64_t calls = f.upstream_calls();
  f.clock.advance(5min);
  BOOST_TEST(f.serve(f.reviews(0, 300, 300)).entry->body == "[]");
  BOOST_TEST(f.upstream_calls() == calls);
}

BOOST_AUTO_TEST_CASE(widget_data_that_contradicts_itself_is_never_a_proof_nor_a_failure) {
  ServiceFixture f;
  f.faults().set(stub::FaultMode::widget_contradict, std::nullopt, stub::FaultEndpoint::widget);
  // No copy yet: served as upstream said it, marked, but proving nothing.
  Served widget = f.serve(f.widget(0));
  BOOST_REQUIRE(widget.ok());
  BOOST_TEST(total_in(widget) == 701u);
  BOOST_REQUIRE(widget.entry->hold.has_value());
  BOOST_TEST(widget.entry->hold->provisional);
  // A page past the end would be answered [] locally from trusted data; from this it is not.
  const std::uint64_t before = f.upstream_calls();
  Served past = f.serve(f.reviews(0, 20, 900));
  BOOST_REQUIRE(past.ok());
  BOOST_TEST(past.entry->body == "[]");
  BOOST_TEST(f.upstream_calls() > before);  // asked upstream, not proven
  // Many such answers never open the circuit.
  for (std::size_t i = 1; i < 8; ++i) BOOST_REQUIRE(f.serve(f.widget(i)).ok());
  BOOST_TEST((f.main().breaker.state() == upstream::CircuitBreaker::State::closed));

  // With an adopted copy, contradicting data is held back like any glitch.
  ServiceFixture g;
  BOOST_REQUIRE(g.serve(g.widget(0)).ok());
  g.clock.advance(1h + 15min);
  g.faults().set(stub::FaultMode::widget_contradict, std::nullopt, stub::FaultEndpoint::widget);
  Served held = g.serve(g.widget(0));
  BOOST_TEST(total_in(held) == 700u);
  BOOST_REQUIRE(held.entry->hold.has_value());
  BOOST_TEST(!held.entry->hold->provisional);
}

BOOST_AUTO_TEST_CASE(a_purge_during_a_hold_adopts_the_next_answer) {
  for (bool soft : {false, true}) {
    BOOST_TEST_CONTEXT((soft ? "soft purge" : "purge")) {
      ServiceFixture f;
      BOOST_REQUIRE(f.serve(f.widget(0)).ok());
      f.clock.advance(1h + 15min);
      f.faults().set(stub::FaultMode::empty_data, std::nullopt, stub::FaultEndpoint::widget);
      BOOST_TEST(f.serve(f.widget(0)).entry->hold.has_value());
      // The operator knows the change is real.
      f.run<bool>([&]() -> boost::asio::awaitable<bool> {
        if (soft)
          co_return !co_await f.main().store.soft_purge_widget(widget_id(f, 0), f.clock.wall_now());
        co_return !co_await f.main().store.purge_widget(widget_id(f, 0));
      });
      drop_widget_from_l1(f, 0);
      Served next = f.serve(f.widget(0));
      BOOST_TEST(f.refreshes_done());
      Served after = f.serve(f.widget(0));
      BOOST_TEST(total_in(after) == 0u);
      BOOST_TEST(!after.entry->hold.has_value());
      if (soft) {
        // The soft-purged copy was served while the refresh replaced it.
        BOOST_TEST(total_in(next) == 700u);
        BOOST_TEST(cache_status(next).find("detail=stale-while-revalidate") != std::string::npos);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(an_announced_hold_drops_the_copy_it_supersedes) {
  // The copy this instance fetched holds finer times than the announcement (milliseconds, as
  // encoded): the held copy, the same stored_at with a later freshness, is newer all the same.
  ServiceFixture f;
  f.clock.advance(std::chrono::nanoseconds(123456789));
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  const std::string key = api::cache_key(f.widget(0));
  const auto mine = f.main().l1.get(key);
  BOOST_REQUIRE(mine);
  const auto in_ms = [](WallTime t) { return std::chrono::floor<std::chrono::milliseconds>(t); };
  auto drop = [&](WallTime stored_at, WallTime fresh_until) {
    return f.run<bool>([&]() -> boost::asio::awaitable<bool> {
      f.main().core.drop_older(key, stored_at, fresh_until);
      co_return f.main().l1.get(key) != nullptr;
    });
  };
  // Its own store, announced: kept.
  BOOST_TEST(drop(in_ms(mine->stored_at), in_ms(mine->fresh_until)));
  // The same copy held back, fresh for longer: dropped, so the next request reads the hold.
  BOOST_TEST(!drop(in_ms(mine->stored_at), in_ms(mine->fresh_until) + 10min));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(guard)

BOOST_AUTO_TEST_CASE(a_burst_of_distinct_keys_is_counted_as_it_starts) {
  // derive_pages off, upstream slow, a burst of distinct pages of one widget over two
  // instances: the guard counts each fetch when it starts, so the burst cannot all pass the
  // check before any is counted.
  ServiceFixture f([](config::Config& c) {
    c.cache.derive_pages = false;
    c.quota.widget_slack = 2;
  });
  Instance& other = f.add_instance();
  // Widget 2: 12 reviews, all googleMap. Bound: 1 (widget data) + 1 + 1 (googleMap) = 3.
  BOOST_REQUIRE(f.serve(f.widget(2)).ok());
  f.faults().set_latency(1000ms);
  std::vector<std::future<Served>> burst;
  for (std::uint32_t limit = 1; limit <= 100; ++limit) {
    burst.push_back(f.start_serve(f.reviews(2, limit, 0), limit % 2 ? &f.main() : &other));
  }
  std::size_t paced = 0;
  for (auto& request : burst) {
    Served served = ServiceFixture::wait(request);
    if (!served.ok() && served.failure == RequestFacts::Failure::paced) ++paced;
  }
  // bound + slack, plus one paced call per widget_pace.
  BOOST_TEST(f.upstream_calls() <= 3u + 2u + 1u);
  BOOST_TEST(paced >= 90u);
}

BOOST_AUTO_TEST_CASE(a_failed_fetch_gives_its_count_back) {
  ServiceFixture f([](config::Config& c) {
    c.cache.derive_pages = false;
    c.quota.widget_slack = 0;
  });
  BOOST_REQUIRE(f.serve(f.widget(2)).ok());  // counted: 1 of 3
  // Four failures (five would open the circuit) count nothing.
  f.faults().set(stub::FaultMode::status500, 4, stub::FaultEndpoint::reviews);
  for (std::uint32_t limit = 1; limit <= 4; ++limit) {
    BOOST_TEST(!f.serve(f.reviews(2, limit, 0)).ok());
  }
  // So the widget still has two fetches within its bound, then its one paced call.
  BOOST_TEST(f.serve(f.reviews(2, 11, 0)).ok());
  BOOST_TEST(f.serve(f.reviews(2, 12, 0)).ok());
  BOOST_TEST(f.serve(f.reviews(2, 13, 0)).ok());
  Served paced = f.serve(f.reviews(2, 14, 0));
  BOOST_TEST((!paced.ok() && paced.failure == RequestFacts::Failure::paced));
}

BOOST_AUTO_TEST_CASE(fetches_refused_during_upstreams_hold_count_nothing) {
  ServiceFixture f([](config::Config& c) {
    c.cache.derive_pages = false;
    c.quota.widget_slack = 0;
  });
  BOOST_REQUIRE(f.serve(f.widget(2)).ok());  // counted: 1 of 3
  // Upstream's 429 holds every fetch for its Retry-After (1 s): the one answered 429 fails,
  // and those asked meanwhile are refused without being sent. None of them counts.
  f.faults().set(stub::FaultMode::status429, 1, stub::FaultEndpoint::reviews);
  BOOST_TEST(!f.serve(f.reviews(2, 1, 0)).ok());
  for (std::uint32_t limit = 2; limit <= 5; ++limit) {
    Served refused = f.serve(f.reviews(2, limit, 0));
    BOOST_TEST(!refused.ok());
    BOOST_TEST(refused.upstream_error == errc::upstream_rate_limited,
               refused.upstream_error.message());
  }
  BOOST_TEST(f.upstream_calls() == 2u);
  // Once the hold is over, the widget still has two fetches within its bound, then its one
  // paced call.
  f.clock.advance(2s);
  BOOST_TEST(f.serve(f.reviews(2, 11, 0)).ok());
  BOOST_TEST(f.serve(f.reviews(2, 12, 0)).ok());
  BOOST_TEST(f.serve(f.reviews(2, 13, 0)).ok());
  Served paced = f.serve(f.reviews(2, 14, 0));
  BOOST_TEST((!paced.ok() && paced.failure == RequestFacts::Failure::paced));
}

BOOST_AUTO_TEST_CASE(confirming_held_back_answers_never_paces_the_widget) {
  ServiceFixture f([](config::Config& c) { c.quota.widget_slack = 0; });
  // Widget 2: 12 reviews, all googleMap. Its keys: the widget data, the all-platform window and
  // the googleMap window: its bound, 3.
  const std::vector<api::ApiRequest> keys{f.widget(2), f.reviews(2, 20, 0),
                                          f.reviews(2, 20, 0, api::Platform::googleMap)};
  for (const auto& request : keys) BOOST_REQUIRE(f.serve(request).ok());
  BOOST_TEST(f.upstream_calls() == 3u);
  // The next period: upstream's glitch empties the widget, and every key is held back (3
  // fetches, the bound).
  f.clock.advance(1h + 15min);
  f.faults().set(stub::FaultMode::empty_data, std::nullopt, stub::FaultEndpoint::any);
  for (const auto& request : keys) {
    Served held = f.serve(request);
    BOOST_REQUIRE(held.ok());
    BOOST_TEST(held.entry->hold.has_value());
  }
  BOOST_TEST(f.upstream_calls() == 6u);
  // The glitch is over by confirm_after: each key's confirmation restores its data. None of
  // them is paced, though the widget spent its bound on the held-back answers.
  f.faults().reset();
  f.clock.advance(11min);
  for (const auto& request : keys) BOOST_REQUIRE(f.serve(request).ok());
  BOOST_TEST(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 9u);
  for (const auto& request : keys) {
    Served restored = f.serve(request);
    BOOST_REQUIRE(restored.ok());
    BOOST_TEST(!restored.entry->hold.has_value());
    BOOST_TEST(cache_status(restored).find("detail=unconfirmed") == std::string::npos);
  }
  BOOST_TEST(total_in(f.serve(f.widget(2))) == 12u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(soft_purge)

BOOST_AUTO_TEST_CASE(no_visitor_waits_and_each_key_is_refreshed_once) {
  ServiceFixture f;
  Instance& other = f.add_instance();
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_REQUIRE(f.serve(f.reviews(0, 300, 0)).ok());
  BOOST_REQUIRE(f.serve(f.widget(0), &other).ok());
  BOOST_REQUIRE(f.serve(f.reviews(0, 300, 0), &other).ok());
  const std::uint64_t before = f.upstream_calls();
  f.clock.advance(1min);
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_return !co_await other.store.soft_purge_widget(widget_id(f, 0), f.clock.wall_now());
  });
  drop_widget_from_l1(f, 0);
  other.l1.erase_prefix(api::widget_key_prefix(widget_id(f, 0)));
  f.faults().set_latency(1000ms);  // slow: a visitor that waited would show it as a miss
  // Twenty minutes on (past stale-while-revalidate), visitors of both instances are answered
  // from the soft-purged copies at once, while one refresh per key runs.
  f.clock.advance(20min);
  for (int round = 0; round < 3; ++round) {
    for (Instance* instance : {&f.main(), &other}) {
      for (const api::ApiRequest& request : {f.widget(0), f.reviews(0, 300, 0)}) {
        Served served = f.serve(request, instance);
        BOOST_REQUIRE(served.ok());
        BOOST_TEST((served.outcome.source == Outcome::Source::cache));
      }
    }
  }
  BOOST_TEST(ServiceFixture::eventually([&] { return f.upstream_calls() >= before + 2; }));
  BOOST_TEST(f.refreshes_done());
  f.faults().set_latency(0ms);
  // The refreshed copies replace them; exactly one call per key.
  BOOST_TEST(ServiceFixture::eventually([&] {
    Served w = f.serve(f.widget(0), &other);
    return w.ok() && cache_status(w) == "widget-gateway; hit; ttl=3600";
  }));
  BOOST_TEST(f.upstream_calls() == before + 2);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(empty_reviews_on_error)

BOOST_AUTO_TEST_CASE(an_empty_block_stands_in_for_an_error_only_when_asked) {
  for (bool on : {false, true}) {
    BOOST_TEST_CONTEXT("empty_reviews_on_error " << on) {
      ServiceFixture f([on](config::Config& c) { c.cache.empty_reviews_on_error = on; });
      f.faults().set(stub::FaultMode::status500, std::nullopt, stub::FaultEndpoint::any);
      Served page = f.serve(f.reviews(0, 20, 0));
      Served widget = f.serve(f.widget(0));
      BOOST_TEST(!widget.ok());  // widget data keeps its errors
      if (!on) {
        BOOST_TEST(!page.ok());
        continue;
      }
      BOOST_REQUIRE(page.ok());
      BOOST_TEST(page.entry->body == "[]");
      BOOST_TEST(cache_status(page) == "widget-gateway; fwd=uri-miss; detail=empty-on-error");
      // Never stored: once upstream answers, the real page is served.
      f.faults().set(stub::FaultMode::none, std::nullopt, stub::FaultEndpoint::any);
      f.clock.advance(1min);  // past the circuit's first pause
      Served real = f.serve(f.reviews(0, 20, 0));
      BOOST_TEST(reviews_in(real) == 20u);
    }
  }
}

BOOST_AUTO_TEST_CASE(an_empty_block_stands_in_for_a_spent_quota_and_a_paced_widget) {
  ServiceFixture f([](config::Config& c) {
    c.cache.empty_reviews_on_error = true;
    c.cache.derive_pages = false;
    c.quota.widget_slack = 0;
  });
  // Paced: widget 2's bound is 3; the widget data and two pages spend it, one paced call goes.
  BOOST_REQUIRE(f.serve(f.widget(2)).ok());
  BOOST_REQUIRE(f.serve(f.reviews(2, 1, 0)).ok());
  BOOST_REQUIRE(f.serve(f.reviews(2, 2, 0)).ok());
  BOOST_REQUIRE(f.serve(f.reviews(2, 3, 0)).ok());  // the paced call
  Served paced = f.serve(f.reviews(2, 4, 0));
  BOOST_REQUIRE(paced.ok());
  BOOST_TEST(paced.entry->body == "[]");
  BOOST_TEST(cache_status(paced) == "widget-gateway; fwd=uri-miss; detail=empty-on-error");
  BOOST_TEST((paced.refusal == metrics::RefusalReason::widget_paced));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // service_freshness_test
