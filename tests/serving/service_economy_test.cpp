// What one public widget id can cost (docs/request-cost.md): walks of skip, type and limit on a
// known widget stay within its bound; the per-widget guard paces a forced over-spend and
// never trips after an upstream outage; a spent quota names itself whatever else refuses.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "service_fixture.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/api/platform.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/quota/quota_period.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;

namespace {

std::uint64_t windows_of(std::uint64_t count) {
  return (count + 299) / 300;
}

// The contract's bound for widget `index` when pages of the platforms `requested` (stub
// indices) are asked for: 1 + ceil(total/300) + per requested platform the widget data names
// max(1, ceil(count/300)).
std::uint64_t bound_for(ServiceFixture& f, std::size_t index,
                        const std::vector<std::size_t>& requested) {
  const stub::WidgetPlan& plan = f.stub().dataset().plan(index);
  std::uint64_t bound = 1 + windows_of(plan.total_reviews);
  for (std::size_t platform : requested) {
    for (const auto& [linked, count] : plan.platforms) {
      if (linked == platform) bound += std::max<std::uint64_t>(1, windows_of(count));
    }
  }
  return bound;
}

// An Admission that refuses every client (as a spent per-IP limit does).
struct RefuseAll : Admission {
  bool admit(std::chrono::seconds& retry_after) override {
    retry_after = std::chrono::seconds(7);
    return false;
  }
  bool admit_unknown(std::chrono::seconds& retry_after) override {
    retry_after = std::chrono::seconds(7);
    return false;
  }
  void refund_unknown() override {}
};

Served serve_refused(ServiceFixture& f, api::ApiRequest request, Admission& admission) {
  return f.run<Served>([&]() { return f.service().serve(request, &admission); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(service_economy_test)

BOOST_AUTO_TEST_SUITE(bound_per_widget)

BOOST_AUTO_TEST_CASE(a_skip_walk_costs_the_windows_and_the_widget_data_never_a_page) {
  ServiceFixture f;
  auto rendered = f.stub().dataset().rendered(0);
  BOOST_REQUIRE_EQUAL(rendered->review_count(), 700u);

  // The walk: limit=1, skip=0,300,...,179700; never asking for the widget data.
  std::size_t local = 0;
  for (std::uint64_t skip = 0; skip <= 179'700; skip += 300) {
    BOOST_TEST_CONTEXT("skip=" << skip) {
      Served served = f.serve(f.reviews(0, 1, skip));
      BOOST_REQUIRE(served.ok());
      BOOST_TEST(served.entry->status == 200);
      BOOST_TEST(served.entry->body == rendered->page(skip, 1));
      if (skip >= 700) {
        BOOST_TEST((served.outcome.detail == Outcome::Detail::local));
        BOOST_TEST(cache_status(served).find("detail=local") != std::string::npos);
        ++local;
      }
    }
  }
  BOOST_TEST(local == 597u);  // skip 900 to 179700
  // Window 0 straight away; skip 300 first obtains the widget data, then windows 300 and 600;
  // everything past 700 is proven empty by the widget data.
  BOOST_TEST(f.upstream_calls() == 4u);
  BOOST_TEST(f.upstream_calls() <= bound_for(f, 0, {}));
  BOOST_TEST(f.stub().handler().stats().widget == 1u);
}

BOOST_AUTO_TEST_CASE(a_type_walk_over_every_platform_stays_within_the_bound) {
  ServiceFixture f;
  auto rendered = f.stub().dataset().rendered(0);
  std::vector<std::size_t> all;
  for (std::size_t p = 0; p < stub::kPlatformCount; ++p) all.push_back(p);

  for (std::size_t p = 0; p < stub::kPlatformCount; ++p) {
    for (std::uint64_t skip : {0, 20, 300, 320, 600, 900, 5000, 179'700}) {
      BOOST_TEST_CONTEXT(stub::kPlatforms[p] << " skip=" << skip) {
        Served served = f.serve(f.reviews(0, 20, skip, platform_of(p)));
        BOOST_REQUIRE(served.ok());
        BOOST_TEST(served.entry->body == rendered->page(skip, 20, p));
      }
    }
  }
  BOOST_TEST(f.upstream_calls() <= bound_for(f, 0, all));
  // The widget data first (a type), once.
  BOOST_TEST(f.stub().handler().stats().widget == 1u);
  // Platforms the widget data does not name cost nothing: only linked ones have windows.
  std::uint64_t linked_windows = 0;
  for (const auto& [platform, count] : f.stub().dataset().plan(0).platforms) {
    linked_windows += std::max<std::uint64_t>(1, windows_of(count));
  }
  BOOST_TEST(f.upstream_reviews_calls() <= linked_windows);
}

BOOST_AUTO_TEST_CASE(a_limit_walk_and_a_second_instance_cost_nothing_more) {
  ServiceFixture f;
  auto rendered = f.stub().dataset().rendered(0);
  Instance& other = f.add_instance();
  int n = 0;
  for (std::uint32_t limit = 1; limit <= 300; limit += 13) {
    for (std::uint64_t skip : {0, 250, 299, 301, 590, 650, 699, 700, 1000}) {
      BOOST_TEST_CONTEXT("limit=" << limit << " skip=" << skip) {
        // Alternating instances: what one fetched, the other reads from Redis.
        Served served = f.serve(f.reviews(0, limit, skip), ++n % 2 ? &other : nullptr);
        BOOST_REQUIRE(served.ok());
        BOOST_TEST(served.entry->body == rendered->page(skip, limit));
      }
    }
  }
  BOOST_TEST(f.upstream_calls() <= bound_for(f, 0, {}));
}

BOOST_AUTO_TEST_CASE(a_short_window_proves_its_list_ends_without_the_widget_data) {
  ServiceFixture f;
  // A widget with fewer than 300 reviews: window 0 is short and ends the list.
  std::optional<std::size_t> small;
  for (std::size_t i = 2; i < f.stub().dataset().size() && !small; ++i) {
    const auto total = f.stub().dataset().plan(i).total_reviews;
    if (total > 0 && total < 300) small = i;
  }
  BOOST_REQUIRE(small.has_value());
  auto rendered = f.stub().dataset().rendered(*small);

  BOOST_REQUIRE(f.serve(f.reviews(*small, 10, 0)).ok());
  BOOST_TEST(f.upstream_calls() == 1u);
  for (std::uint64_t skip : {300, 600, 5000, 179'700}) {
    Served served = f.serve(f.reviews(*small, 10, skip));
    BOOST_REQUIRE(served.ok());
    BOOST_TEST(served.entry->body == "[]");
    BOOST_TEST((served.outcome.detail == Outcome::Detail::local));
  }
  // Past the end within window 0: cut from it.
  Served inside = f.serve(f.reviews(*small, 10, rendered->review_count()));
  BOOST_REQUIRE(inside.ok());
  BOOST_TEST(inside.entry->body == "[]");
  BOOST_TEST(f.upstream_calls() == 1u);  // not even the widget data
}

BOOST_AUTO_TEST_CASE(a_platform_named_only_in_sources_costs_one_window_however_it_is_walked) {
  ServiceFixture f;
  // The widget with the most reviews, its data naming one more source than it links: a
  // platform with no count and (as the stub answers) no reviews.
  std::size_t big = 0;
  for (std::size_t i = 0; i < f.stub().dataset().size(); ++i) {
    if (f.stub().dataset().plan(i).total_reviews > f.stub().dataset().plan(big).total_reviews) {
      big = i;
    }
  }
  const std::uint64_t total = f.stub().dataset().plan(big).total_reviews;
  BOOST_REQUIRE(total >= 900u);  // four windows of the walk down
  const api::ApiRequest widget = f.widget(big);
  f.faults().set(stub::FaultMode::uncounted_source, std::nullopt, stub::FaultEndpoint::widget,
                 std::nullopt, widget.widget_id);
  std::optional<api::Platform> only_in_sources;
  for (std::size_t p = 0; p < stub::kPlatformCount && !only_in_sources; ++p) {
    const auto& linked = f.stub().dataset().plan(big).platforms;
    if (std::none_of(linked.begin(), linked.end(), [&](const auto& l) { return l.first == p; })) {
      only_in_sources = platform_of(p);
    }
  }
  BOOST_REQUIRE(only_in_sources.has_value());
  BOOST_REQUIRE(f.serve(widget).ok());

  // A walk down from the top of the widget's reviews, pages of 20 and window-shaped requests,
  // from two instances.
  Instance& other = f.add_instance();
  int n = 0;
  for (std::uint64_t skip = total - 1;; skip -= std::min<std::uint64_t>(skip, 170)) {
    BOOST_TEST_CONTEXT("skip=" << skip) {
      Served page = f.serve(f.reviews(big, 20, skip, only_in_sources), ++n % 2 ? &other : nullptr);
      BOOST_REQUIRE(page.ok());
      BOOST_TEST(page.entry->body == "[]");
      const std::uint64_t window_start = skip - skip % 300;
      Served window = f.serve(f.reviews(big, 300, window_start, only_in_sources));
      BOOST_REQUIRE(window.ok());
      BOOST_TEST(window.entry->body == "[]");
    }
    if (skip == 0) break;
  }
  // The widget data and window 0, which proves the list empty: 2 calls, not one per window.
  BOOST_TEST(f.upstream_calls() == 2u);
  BOOST_TEST(f.upstream_calls() <= 1 + windows_of(total) + 1);
}

BOOST_AUTO_TEST_CASE(a_failed_widget_data_fetch_is_the_answer_without_a_second_call) {
  ServiceFixture f;
  f.faults().set(stub::FaultMode::status500, 1, stub::FaultEndpoint::widget);
  Served failed = f.serve(f.reviews(0, 20, 300));
  BOOST_TEST(!failed.ok());
  BOOST_TEST(failed.error == api::ErrorCode::upstream_error);
  BOOST_TEST(f.upstream_calls() == 1u);  // the widget data only; no window
  BOOST_TEST(f.upstream_reviews_calls() == 0u);

  Served next = f.serve(f.reviews(0, 20, 300));
  BOOST_REQUIRE(next.ok());
  BOOST_TEST(next.entry->body == f.stub().dataset().rendered(0)->page(300, 20));
  BOOST_TEST(f.upstream_calls() == 3u);  // widget data, window 300
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(guard)

BOOST_AUTO_TEST_CASE(a_forced_over_spend_is_paced_with_stale_copies_served) {
  // With derive_pages off every distinct page is a key of its own: the bound is not promised,
  // and the guard is what caps the spend.
  ServiceFixture f([](config::Config& c) {
    c.cache.derive_pages = false;
    c.quota.widget_slack = 2;
  });
  auto rendered = f.stub().dataset().rendered(0);
  // Period P0: one page, kept for later.
  BOOST_REQUIRE(f.serve(f.reviews(0, 1, 0)).ok());
  // Period P1 (1h segments: max_ttl 1h): page 0 is stale 15 min, beyond swr, within sie.
  f.clock.advance(1h + 15min);
  // The widget data is never asked for (skip < 300, no type): its bound is 2 (widget data and
  // window 0) and the guard allows 2 + 2 stored fetches, then one call per widget_pace.
  for (std::uint64_t skip = 1; skip <= 5; ++skip) {
    Served served = f.serve(f.reviews(0, 1, skip));
    BOOST_REQUIRE(served.ok());
    BOOST_TEST(served.entry->body == rendered->page(skip, 1));
  }
  const auto calls = f.upstream_calls();
  BOOST_TEST(calls == 1u + 4u + 1u);

  for (std::uint64_t skip = 6; skip <= 20; ++skip) {
    Served paced = f.serve(f.reviews(0, 1, skip));
    BOOST_TEST(!paced.ok());
    BOOST_TEST(paced.error == api::ErrorCode::service_unavailable);
    BOOST_TEST(paced.retry_after.count() > 0);
    BOOST_TEST(paced.retry_after.count() <= 300);
    BOOST_TEST(std::string(paced.message).find("quota.widget_slack") != std::string::npos);
    BOOST_TEST((paced.refusal == metrics::RefusalReason::widget_paced));
  }
  // A stale copy is served instead of the error.
  Served stale = f.serve(f.reviews(0, 1, 0));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::widget_paced);
  BOOST_TEST(cache_status(stale).find("detail=widget-paced") != std::string::npos);
  BOOST_TEST(f.upstream_calls() == calls);

  // Fresh copies are still hits; the next period starts the count again.
  BOOST_REQUIRE(f.serve(f.reviews(0, 1, 3)).ok());
  f.clock.advance(1h);
  BOOST_REQUIRE(f.serve(f.reviews(0, 1, 50)).ok());
  BOOST_TEST(f.upstream_calls() == calls + 1);
}

BOOST_AUTO_TEST_CASE(an_upstream_outage_never_trips_the_guard) {
  ServiceFixture f([](config::Config& c) { c.cache.derive_pages = false; });
  // Upstream fails a while: many attempts, none stored, none counted.
  f.faults().set(stub::FaultMode::status500, std::nullopt, stub::FaultEndpoint::any);
  for (int round = 0; round < 4; ++round) {
    for (std::uint64_t skip = 0; skip < 5; ++skip) BOOST_TEST(!f.serve(f.reviews(0, 1, skip)).ok());
    f.clock.advance(31s);  // the circuit half-opens: the next attempt reaches upstream
  }
  const auto failures = f.upstream_calls();
  BOOST_TEST(failures >= 8u);
  f.faults().reset();
  f.clock.advance(31s);
  // Back: the same pages are fetched as if nothing had happened (4 = 2 + the slack).
  for (std::uint64_t skip = 0; skip < 4; ++skip) {
    Served served = f.serve(f.reviews(0, 1, skip));
    BOOST_REQUIRE(served.ok());
    BOOST_TEST(served.outcome.source == Outcome::Source::upstream);
  }
  BOOST_TEST(f.upstream_calls() == failures + 4);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(refusals)

BOOST_AUTO_TEST_CASE(a_spent_quota_names_itself_whatever_else_refuses) {
  ServiceFixture f([](config::Config& c) {
    c.quota.monthly_limit = 1;
    c.quota.unknown_share = 1;
  });
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_REQUIRE((f.main().quota.snapshot().mode == quota::Mode::exhausted));
  const auto period = quota::quota_period(f.clock.wall_now(), f.config.quota.utc_offset);
  auto expect_quota = [&](const Served& served) {
    BOOST_TEST(!served.ok());
    BOOST_TEST(served.error == api::ErrorCode::quota_exhausted);
    BOOST_TEST(
        served.retry_after.count() ==
        std::chrono::ceil<std::chrono::seconds>(period.resets_at - f.clock.wall_now()).count());
  };

  // The client's own limits.
  RefuseAll refuse;
  expect_quota(serve_refused(f, f.widget(1), refuse));
  // An id nobody knows yet (its per-client limit and the unknown budget).
  expect_quota(serve_refused(f, f.widget_id("ffffffffffffffffffffffff"), refuse));
  // Upstream's hold.
  f.main().hold.hold_until(f.clock.steady_now() + 60s, 429);
  expect_quota(f.serve(f.widget(2)));
  // An open circuit.
  for (int i = 0; i < 5; ++i) f.main().breaker.on_failure(f.clock.steady_now());
  BOOST_REQUIRE(f.main().breaker.rejects(f.clock.steady_now()));
  expect_quota(f.serve(f.widget(3)));
  expect_quota(f.serve(f.reviews(3, 20, 300)));
  BOOST_TEST(f.upstream_calls() == 1u);

  // A stale copy still wins over the 429.
  f.clock.advance(2h);
  Served stale = f.serve(f.widget(0));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::quota_exhausted);
}

BOOST_AUTO_TEST_CASE(rate_limited_says_which_limit_refused) {
  ServiceFixture f;
  RefuseAll refuse;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());  // widget 0 is known from now on
  Served client = serve_refused(f, f.widget(1), refuse);
  BOOST_TEST(!client.ok());
  BOOST_TEST(client.error == api::ErrorCode::rate_limited);
  BOOST_TEST(std::string(client.message).find("access.per_ip_rate") != std::string::npos);
  BOOST_TEST((client.refusal == metrics::RefusalReason::client_rate));

  f.main().hold.hold_until(f.clock.steady_now() + 60s, 429);
  Served upstream = f.serve(f.widget(2));
  BOOST_TEST(!upstream.ok());
  BOOST_TEST(upstream.error == api::ErrorCode::rate_limited);
  BOOST_TEST(std::string(upstream.message).find("its own 429") != std::string::npos);
  BOOST_TEST((upstream.refusal == metrics::RefusalReason::upstream_rate_limited));
  BOOST_TEST(upstream.retry_after.count() >= 59);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(races)

BOOST_AUTO_TEST_CASE(a_purge_during_a_fetch_stores_nothing_under_the_new_generation) {
  ServiceFixture f;
  const api::ApiRequest request = f.widget(0);
  const std::string key = api::cache_key(request);
  // The fetch is under way (upstream has the request, and answers it late) when the purge
  // comes: from another instance, through Redis, announced to this one.
  f.faults().set_latency(500ms);
  std::future<Served> in_flight = f.start_serve(request);
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return f.upstream_calls() == 1u; }));
  Instance& other = f.add_instance();
  BOOST_REQUIRE(f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_return !co_await other.store.purge_widget(request.widget_id);
  }));
  const std::string escaped = api::escape_key_id(request.widget_id);
  const long long generation =
      f.redis_server.integer({"GET", other.store.keys().widget_generation(escaped)});
  BOOST_REQUIRE_EQUAL(generation, 1);
  // What this instance's purge subscriber does with the announcement, on the worker's thread.
  BOOST_REQUIRE(f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    const auto prefix = f.main().store.apply_purge_message("w 1 " + escaped);
    if (prefix) f.main().l1.erase_prefix(*prefix);
    co_return prefix.has_value();
  }));

  // The client that asked still gets upstream's answer...
  Served answered = ServiceFixture::wait(in_flight);
  BOOST_REQUIRE(answered.ok());
  BOOST_TEST(answered.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(!answered.outcome.stored);
  // ...but nothing of it is kept: not in L1, not under the new generation in Redis.
  BOOST_TEST(!f.main().l1.get(key));
  const std::string physical = f.run<std::string>([&]() -> boost::asio::awaitable<std::string> {
    auto [ec, name] = co_await f.main().store.physical(key);
    co_return ec ? std::string() : name;
  });
  BOOST_REQUIRE(physical.find(".1:") != std::string::npos);  // the new widget generation
  BOOST_TEST(f.redis_server.command({"EXISTS", physical}) == "0");
  // The next request fetches afresh.
  f.faults().set_latency(0ms);
  Served next = f.serve(request);
  BOOST_REQUIRE(next.ok());
  BOOST_TEST(next.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(f.upstream_calls() == 2u);
}

BOOST_AUTO_TEST_CASE(a_lock_holder_waiting_for_an_upstream_slot_keeps_its_lock) {
  // The fetch lock lives connect_timeout + timeout + 1 s = 8.5 s. Instance A's one upstream
  // slot is taken by a slow fetch (4.5 s), so its fetch of another key waits for the slot, then
  // for upstream: about 9 s in all. Instance B asks for that key meanwhile. Each exchange has 2 s
  // to spare before its own timeout, so that a loaded machine (sanitizers, four tests at once)
  // does not time it out.
  ServiceFixture f([](config::Config& c) {
    c.upstream.connect_timeout = 1s;
    c.upstream.timeout = 6500ms;
    c.upstream.max_in_flight = 1;
  });
  f.faults().set_latency(4500ms);
  Instance& other = f.add_instance();
  std::future<Served> occupying = f.start_serve(f.widget(1));
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return f.upstream_calls() == 1u; }));
  std::future<Served> holder = f.start_serve(f.widget(0));  // takes the lock, waits for a slot
  BOOST_REQUIRE(ServiceFixture::eventually([&] {
    return f.redis_server.command({"EXISTS", "wg:{" + f.widget(0).widget_id + "}:w:lock"}) == "1";
  }));
  std::future<Served> waiter = f.start_serve(f.widget(0), &other);
  BOOST_REQUIRE(ServiceFixture::wait(occupying).ok());
  Served held = ServiceFixture::wait(holder);
  Served waited = ServiceFixture::wait(waiter);
  BOOST_REQUIRE(held.ok());
  BOOST_REQUIRE(waited.ok());
  // Widget 0 was paid for once: the waiter read what the holder stored.
  BOOST_TEST(f.upstream_calls() == 2u);
  BOOST_TEST(waited.upstream_ms < 0);
  BOOST_TEST(waited.outcome.source == Outcome::Source::collapsed);  // "hit; collapsed"
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // service_economy_test
