#include <boost/test/unit_test.hpp>

#include <cmath>

#include <random>
#include <set>
#include <sstream>

#include "frontend/response_builder.hpp"
#include "service_fixture.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/error.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;

namespace {}  // namespace

BOOST_AUTO_TEST_SUITE(service_cache_test)

BOOST_AUTO_TEST_CASE(a_miss_is_stored_and_the_next_request_is_an_l1_hit_without_redis) {
  ServiceFixture f;
  Served first = f.serve(f.widget(0));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(first.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(first.outcome.stored);
  BOOST_TEST(first.entry->body == f.stub().dataset().rendered(0)->body());
  BOOST_TEST(cache_status(first) == "widget-gateway; fwd=uri-miss; stored; ttl=3600");
  BOOST_TEST(f.upstream_calls() == 1u);

  const std::uint64_t before = redis_commands(f.redis_server);
  f.clock.advance(10min);
  Served second = f.serve(f.widget(0));
  BOOST_TEST(redis_commands(f.redis_server) == before);  // an L1 hit costs no Redis round trip
  BOOST_REQUIRE(second.ok());
  BOOST_TEST(second.outcome.source == Outcome::Source::cache);
  BOOST_TEST(second.entry == first.entry);
  BOOST_TEST(cache_status(second) == "widget-gateway; hit; ttl=3000");

  // And it needs no Redis at all.
  f.redis_server.stop();
  Served third = f.serve(f.widget(0));
  BOOST_REQUIRE(third.ok());
  BOOST_TEST(third.outcome.source == Outcome::Source::cache);
  BOOST_TEST(f.upstream_calls() == 1u);
}

BOOST_AUTO_TEST_CASE(a_fetched_copy_and_its_lock_done_take_one_round_trip) {
  ServiceFixture f;
  std::size_t replies = 0;  // during the store below (the listener runs on the io thread)
  bool storing = false;
  f.main().redis.on_round_trip([&](auto, auto) { replies += storing ? 1 : 0; });
  const std::string key = api::cache_key(f.widget(0));
  const std::string lock = f.main().store.keys().unversioned(serving::lock_key_for(key));
  auto entry = std::make_shared<cache::Entry>();
  entry->stored_at = f.clock.wall_now();
  entry->fresh_until = entry->stored_at + 1h;
  entry->stale_until = entry->fresh_until + 1h;
  entry->body = "{}";
  const bool stored = f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    auto [ec, placement] = co_await f.main().store.place(key);
    if (ec) co_return false;
    const cache::LockDone done = f.main().lock.done_for(serving::lock_key_for(key), "", "");
    storing = true;
    const bool ok = co_await f.main().tier.store(key, entry, placement, &done);
    storing = false;
    co_return ok;
  });
  BOOST_REQUIRE(stored);
  BOOST_TEST(replies == 1u);  // the copy and the lock's "done" in one script
  BOOST_TEST(f.redis_server.command({"GET", lock}) == "done");
  const long long left = std::stoll(f.redis_server.command({"PTTL", lock}));
  BOOST_TEST(left > 0);
  BOOST_TEST(left <= FetchLock::kDoneFor.count());
  f.main().l1.clear();
  const Served read = f.serve(f.widget(0));  // from Redis, as stored
  BOOST_TEST(read.outcome.source == Outcome::Source::cache);
  BOOST_TEST(read.entry->body == "{}");
  BOOST_TEST(f.upstream_calls() == 0u);
}

BOOST_AUTO_TEST_CASE(a_stored_miss_is_announced_once) {
  ServiceFixture f;
  const std::uint64_t before = redis_calls(f.redis_server, {"publish"});
  Served first = f.serve(f.widget(0));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(first.outcome.stored);
  // By the script that stored it and marked the lock done: not again after it.
  BOOST_TEST(redis_calls(f.redis_server, {"publish"}) - before == 1u);
}

BOOST_AUTO_TEST_CASE(an_l2_hit_fills_l1) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  f.main().l1.clear();
  Served from_redis = f.serve(f.widget(0));
  BOOST_REQUIRE(from_redis.ok());
  BOOST_TEST(from_redis.outcome.source == Outcome::Source::cache);
  const std::uint64_t before = redis_commands(f.redis_server);
  BOOST_TEST(f.serve(f.widget(0)).outcome.source == Outcome::Source::cache);
  BOOST_TEST(redis_commands(f.redis_server) == before);
  BOOST_TEST(f.upstream_calls() == 1u);
}

BOOST_AUTO_TEST_CASE(hundred_concurrent_requests_on_one_cold_key_make_one_upstream_call) {
  ServiceFixture f;
  f.faults().set_latency(300ms);  // the requests really overlap the one fetch
  auto results = f.serve_concurrently(f.widget(3), 100);
  int misses = 0, collapsed = 0;
  for (const Served& served : results) {
    BOOST_REQUIRE(served.ok());
    BOOST_TEST(served.entry->body == results.front().entry->body);
    misses += served.outcome.source == Outcome::Source::upstream;
    collapsed += served.outcome.source == Outcome::Source::collapsed;
  }
  BOOST_TEST(f.upstream_calls() == 1u);
  BOOST_TEST(misses == 1);
  BOOST_TEST(collapsed + misses == 100);  // nobody found it cached: they all waited
}

BOOST_AUTO_TEST_CASE(hundred_concurrent_requests_split_over_two_instances_make_one_call) {
  ServiceFixture f;
  Instance& other = f.add_instance();  // own L1 and coalescer, same Redis and upstream
  f.faults().set_latency(300ms);
  std::vector<std::future<Served>> futures;
  for (int i = 0; i < 100; ++i) {
    futures.push_back(f.start_serve(f.widget(4), i % 2 ? &other : nullptr));
  }
  for (auto& future : futures) {
    Served served = ServiceFixture::wait(future);
    BOOST_REQUIRE(served.ok());
    BOOST_TEST(served.entry->status == 200);
  }
  BOOST_TEST(f.upstream_calls() == 1u);
  // Once the entry is stored, the lock says so for a moment (a late lookup reads the entry
  // instead of fetching again), and then expires.
  const std::string lock = KeySpace().unversioned(lock_key_for(api::cache_key(f.widget(4))));
  BOOST_TEST(f.redis_server.command({"GET", lock}) == "done");
  const long long left = std::stoll(f.redis_server.command({"PTTL", lock}));
  BOOST_TEST(left > 0);
  BOOST_TEST(left <= FetchLock::kDoneFor.count());
}

BOOST_AUTO_TEST_CASE(forty_pages_of_a_700_review_widget_cost_three_windows_and_the_widget_data) {
  ServiceFixture f;
  auto rendered = f.stub().dataset().rendered(0);
  BOOST_REQUIRE_EQUAL(rendered->review_count(), 700u);

  std::set<std::pair<std::uint32_t, std::uint64_t>> pairs{
      {1, 0},     {20, 0},   {300, 1},   {299, 1},  {1, 699},
      {300, 400}, {50, 280}, {300, 599}, {10, 695}, {7, 3}};
  std::mt19937 draw(42);
  while (pairs.size() < 40) {
    const auto limit = static_cast<std::uint32_t>(1 + draw() % 300);
    const std::uint64_t skip = draw() % 700;
    if (limit == 300 && skip % 300 == 0) continue;  // a window itself is no derivation
    pairs.emplace(limit, skip);
  }
  for (const auto& [limit, skip] : pairs) {
    BOOST_TEST_CONTEXT("limit=" << limit << " skip=" << skip) {
      Served served = f.serve(f.reviews(0, limit, skip));
      BOOST_REQUIRE(served.ok());
      BOOST_TEST((served.outcome.detail == Outcome::Detail::derived));
      BOOST_TEST(served.entry->status == 200);
      BOOST_TEST(served.entry->body == rendered->page(skip, limit));
    }
  }
  BOOST_TEST(f.upstream_reviews_calls() == 3u);  // windows 0, 300 and 600
  // and the widget data, before the first window at 300 or more (docs/request-cost.md)
  BOOST_TEST(f.upstream_calls() == 4u);

  // Windows fetched here carry their elements' offsets, so pages are cut without parsing
  // 150 KB again; another instance reads the windows from Redis (no offsets there), parses
  // them and cuts the same bytes.
  auto window = f.main().l1.get(api::cache_key(f.reviews(0, 300, 0)));
  BOOST_REQUIRE(window);
  BOOST_REQUIRE(window->element_spans.has_value());
  BOOST_TEST(window->element_spans->size() == 300u);
  Instance& other = f.add_instance();
  Served elsewhere = f.serve(f.reviews(0, 17, 290), &other);
  BOOST_REQUIRE(elsewhere.ok());
  BOOST_TEST(elsewhere.entry->body == rendered->page(290, 17));
  BOOST_TEST(f.upstream_calls() == 4u);
  // ... and keeps the offsets it found on its own copy, for the next page it cuts.
  auto read_window = other.l1.get(api::cache_key(f.reviews(0, 300, 0)));
  BOOST_REQUIRE(read_window);
  BOOST_REQUIRE(read_window->element_spans.has_value());
  BOOST_TEST(read_window->element_spans->size() == 300u);

  // A derived page is answered as upstream answers it, byte for byte, type filter included.
  const auto platform = f.stub().dataset().plan(0).platforms.front();
  const std::size_t of_type = platform.second;
  Served typed = f.serve(f.reviews(0, 25, of_type > 30 ? 5 : 0, platform_of(platform.first)));
  BOOST_REQUIRE(typed.ok());
  BOOST_TEST(typed.entry->body == rendered->page(of_type > 30 ? 5 : 0, 25, platform.first));
}

BOOST_AUTO_TEST_CASE(provably_empty_pages_are_answered_locally) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());  // the widget data is the proof
  BOOST_REQUIRE(f.serve(f.widget(1)).ok());  // widget 1: no reviews, no sources
  const auto calls = f.upstream_calls();
  BOOST_REQUIRE_EQUAL(calls, 2u);

  const auto& plan = f.stub().dataset().plan(0);
  std::optional<std::size_t> missing_platform;
  for (std::size_t p = 0; p < stub::kPlatformCount && !missing_platform; ++p) {
    bool linked = false;
    for (const auto& [index, count] : plan.platforms) linked = linked || index == p;
    if (!linked) missing_platform = p;
  }
  BOOST_REQUIRE(missing_platform.has_value());

  std::vector<api::ApiRequest> empty_pages{
      f.reviews(0, 10, 700),
      f.reviews(0, 1, 1000000000),
      f.reviews(0, 300, 900),  // window-shaped, still provably empty
      f.reviews(0, 20, 0, platform_of(*missing_platform)),
      f.reviews(1, 20, 0),
      f.reviews(1, 300, 0),
  };
  for (const auto& request : empty_pages) {
    BOOST_TEST_CONTEXT(api::cache_key(request)) {
      Served served = f.serve(request);
      BOOST_REQUIRE(served.ok());
      BOOST_TEST((served.outcome.detail == Outcome::Detail::local));
      BOOST_TEST(served.entry->status == 200);
      BOOST_TEST(served.entry->body == "[]");
      BOOST_TEST(cache_status(served).find("detail=local") != std::string::npos);
    }
  }
  BOOST_TEST(f.upstream_calls() == calls);
}

BOOST_AUTO_TEST_CASE(unknown_widgets_are_cached_negatively_for_negative_ttl) {
  ServiceFixture f;
  const std::string unknown = "ffffffffffffffffffffffff";
  BOOST_REQUIRE(!f.stub().dataset().find(unknown).has_value());

  Served first = f.serve(f.widget_id(unknown));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(first.entry->status == 404);
  BOOST_TEST(f.upstream_calls() == 1u);

  f.clock.advance(4min);
  Served second = f.serve(f.widget_id(unknown));
  BOOST_REQUIRE(second.ok());
  BOOST_TEST(second.outcome.source == Outcome::Source::cache);
  BOOST_TEST(second.entry->status == 404);
  // Its reviews are known to be unknown too: 400, as upstream answers, without asking.
  api::ApiRequest reviews{api::Endpoint::reviews, unknown, {20, 0, std::nullopt}};
  Served local = f.serve(reviews);
  BOOST_REQUIRE(local.ok());
  BOOST_TEST(local.entry->status == 400);
  BOOST_TEST(f.upstream_calls() == 1u);

  // Also from Redis alone.
  f.main().l1.clear();
  BOOST_TEST(f.serve(f.widget_id(unknown)).entry->status == 404);
  BOOST_TEST(f.upstream_calls() == 1u);

  // negative_ttl (5min) over: asked again, and no stale window for a negative answer.
  f.clock.advance(2min);
  f.faults().set(stub::FaultMode::status500, 1, stub::FaultEndpoint::any);
  Served expired = f.serve(f.widget_id(unknown));
  BOOST_TEST(!expired.ok());
  BOOST_TEST(expired.error == api::ErrorCode::upstream_error);
  BOOST_TEST(f.upstream_calls() == 2u);
  Served again = f.serve(f.widget_id(unknown));
  BOOST_REQUIRE(again.ok());
  BOOST_TEST(again.entry->status == 404);
  BOOST_TEST(again.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(f.upstream_calls() == 3u);
}

BOOST_AUTO_TEST_SUITE(shared_reads)

// Redis holds every command for `pause` (the gateway's own timeout is longer), so that the
// requests started meanwhile surely overlap.
void pause_redis(ServiceFixture& f, std::chrono::milliseconds pause) {
  f.redis_server.command({"CLIENT", "PAUSE", std::to_string(pause.count()), "ALL"});
}

void longer_redis_timeout(config::Config& config) {
  config.redis.timeout = 10s;
}

BOOST_AUTO_TEST_CASE(concurrent_misses_of_one_key_read_it_from_redis_once) {
  ServiceFixture f(longer_redis_timeout);
  for (const api::ApiRequest& request : {f.widget(3), f.reviews(3, 20)}) {
    BOOST_REQUIRE(f.serve(request).ok());
    // What one miss reads (a page: its widget data with its window, then its own key).
    f.main().l1.clear();
    std::uint64_t reads = redis_calls(f.redis_server, {"get", "mget"});
    BOOST_REQUIRE(f.serve(request).ok());
    const std::uint64_t one_miss = redis_calls(f.redis_server, {"get", "mget"}) - reads;
    BOOST_TEST(one_miss >= 1u);
    // Fifty at once read no more.
    f.main().l1.clear();
    reads = redis_calls(f.redis_server, {"get", "mget"});
    pause_redis(f, 300ms);
    std::vector<Served> results = f.serve_concurrently(request, 50);
    for (const Served& served : results) {
      BOOST_REQUIRE(served.ok());
      BOOST_TEST(served.outcome.source == Outcome::Source::cache);
      // One decoded copy for all of them.
      BOOST_TEST(served.entry->body == results.front().entry->body);
    }
    BOOST_TEST(redis_calls(f.redis_server, {"get", "mget"}) - reads == one_miss);
  }
  BOOST_TEST(f.upstream_calls() == 2u);
}

BOOST_AUTO_TEST_CASE(reads_of_many_keys_wait_their_turn_past_the_bound) {
  constexpr std::size_t kKeys = 100;
  ServiceFixture f(longer_redis_timeout, kKeys);
  for (std::size_t i = 0; i < kKeys; ++i) BOOST_REQUIRE(f.serve(f.widget(i)).ok());
  f.main().l1.clear();
  pause_redis(f, 2000ms);
  std::vector<std::future<Served>> started;
  for (std::size_t i = 0; i < kKeys; ++i) started.push_back(f.start_serve(f.widget(i)));
  auto reads = [&] {
    return f.run<std::pair<std::size_t, std::size_t>>(
        [&]() -> boost::asio::awaitable<std::pair<std::size_t, std::size_t>> {
          co_return std::pair(f.main().tier.reads_in_flight(), f.main().tier.reads_waiting());
        });
  };
  // All of them asked while Redis held the first ones: the bound, and the others in line.
  BOOST_TEST(ServiceFixture::eventually([&] {
    return reads() == std::pair(CacheTier::kMaxReadsInFlight, kKeys - CacheTier::kMaxReadsInFlight);
  }));
  for (auto& future : started) {
    Served served = ServiceFixture::wait(future);
    BOOST_REQUIRE(served.ok());
    BOOST_TEST(served.outcome.source == Outcome::Source::cache);
  }
  BOOST_TEST((reads() == std::pair<std::size_t, std::size_t>(0, 0)));
  BOOST_TEST(f.upstream_calls() == kKeys);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(upstream_failures_are_never_cached) {
  ServiceFixture f;
  f.faults().set(stub::FaultMode::status500, 1, stub::FaultEndpoint::any);
  Served failed = f.serve(f.widget(0));
  BOOST_TEST(!failed.ok());
  BOOST_TEST(failed.upstream_error == make_error_code(errc::upstream_bad_status));
  const std::string key = api::cache_key(f.widget(0));  // outlives the coroutine below
  auto [ec, physical] =
      f.run<std::pair<std::error_code, std::string>>([&] { return f.main().store.physical(key); });
  BOOST_REQUIRE(!ec);
  BOOST_TEST(f.redis_server.command({"EXISTS", physical}) == "0");
  Served next = f.serve(f.widget(0));
  BOOST_REQUIRE(next.ok());
  BOOST_TEST(next.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(f.upstream_calls() == 2u);
}

// The synchronous first look of a request (the public listener's hit path), on the io thread
// that owns the service.
std::optional<Served> from_l1(ServiceFixture& f, const api::ApiRequest& request) {
  return f.run<std::optional<Served>>([&]() -> boost::asio::awaitable<std::optional<Served>> {
    FirstLook look;
    co_return f.service().serve_from_l1(request, look);
  });
}

BOOST_AUTO_TEST_CASE(fresh_l1_copies_are_served_without_a_coroutine_and_without_redis) {
  ServiceFixture f;
  BOOST_TEST(!from_l1(f, f.widget(0)).has_value());  // nothing cached yet
  Served first = f.serve(f.widget(0));
  BOOST_REQUIRE(first.ok());
  Served page = f.serve(f.reviews(0, 10));
  BOOST_REQUIRE(page.ok());
  BOOST_TEST((page.outcome.detail == Outcome::Detail::derived));

  const std::uint64_t before = redis_commands(f.redis_server);
  f.clock.advance(10min);
  std::optional<Served> fast = from_l1(f, f.widget(0));
  BOOST_REQUIRE(fast.has_value());
  BOOST_TEST(fast->outcome.source == Outcome::Source::cache);
  BOOST_TEST(fast->entry == first.entry);
  BOOST_TEST(cache_status(*fast) == "widget-gateway; hit; ttl=3000");
  // A derived page is answered the same way, and says so.
  std::optional<Served> fast_page = from_l1(f, f.reviews(0, 10));
  BOOST_REQUIRE(fast_page.has_value());
  BOOST_TEST(fast_page->entry == page.entry);
  BOOST_TEST(cache_status(*fast_page) == "widget-gateway; hit; ttl=3000; detail=derived");
  BOOST_TEST(redis_commands(f.redis_server) == before);
  BOOST_TEST(f.upstream_calls() == 2u);  // the widget and one window

  // Past freshness it steps aside: serve() decides about stale copies.
  f.clock.advance(1h);
  BOOST_TEST(!from_l1(f, f.widget(0)).has_value());
  BOOST_TEST(!from_l1(f, f.reviews(0, 10)).has_value());
}

namespace {

// The copy of `request` in L1 and in Redis, given an early refresh moment `head` before its
// expiry (as a fetch that took head / -ln(draw) would have drawn it).
void due_early(ServiceFixture& f, Instance& instance, const api::ApiRequest& request,
               std::chrono::seconds head) {
  const std::string key = api::cache_key(request);
  auto copy = std::make_shared<cache::Entry>(*instance.l1.get(key));
  copy->early_at = copy->fresh_until - head;
  instance.tier.store_local(key, copy);
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_return !co_await instance.store.put(key, *copy);
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_early_refresh_is_drawn_once_with_what_the_fetch_cost) {
  ServiceFixture f;
  // A draw of e^-400: a head start of 400 times the fetch time (1 ms at least; the test clock
  // stands still during the fetch).
  f.random.set(std::exp(-400.0));
  Served first = f.serve(f.widget(0));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(first.entry->fetch_time == 1ms);
  const auto head = first.entry->fresh_until - first.entry->early_at;
  BOOST_TEST((head > 390ms && head < 410ms));
  // A draw of 1 never refreshes early.
  f.random.set(1.0);
  Served other = f.serve(f.widget(1));
  BOOST_REQUIRE(other.ok());
  BOOST_TEST((other.entry->early_at == other.entry->fresh_until));
}

BOOST_AUTO_TEST_CASE(fresh_l1_copy_near_its_end_is_served_and_refreshed_early) {
  ServiceFixture f;
  Served first = f.serve(f.widget(0));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(f.upstream_calls() == 1u);
  due_early(f, f.main(), f.widget(0), 40s);
  // A minute of freshness left: not yet.
  f.clock.advance(3600s - 60s);
  BOOST_REQUIRE(from_l1(f, f.widget(0)).has_value());
  BOOST_TEST(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 1u);
  // 30 s left: served, and refreshed in the background.
  f.clock.advance(30s);
  std::optional<Served> fast = from_l1(f, f.widget(0));
  BOOST_REQUIRE(fast.has_value());
  BOOST_TEST(fast->outcome.source == Outcome::Source::cache);
  BOOST_TEST((fast->entry->stored_at == first.entry->stored_at));
  BOOST_TEST(fast->outcome.stale() == StaleReason::none);
  BOOST_TEST(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 2u);  // one background refresh
}

BOOST_AUTO_TEST_CASE(an_early_refresh_is_paid_once_for_every_instance) {
  // The moment is in the copy: every instance that holds it refreshes then, and all but the
  // first adopt what the first stored instead of calling upstream.
  ServiceFixture f;
  Instance& other = f.add_instance();
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  due_early(f, f.main(), f.widget(0), 40s);
  BOOST_REQUIRE(f.serve(f.widget(0), &other).ok());  // read from Redis into its L1
  BOOST_TEST(f.upstream_calls() == 1u);
  f.clock.advance(3600s - 30s);
  BOOST_REQUIRE(from_l1(f, f.widget(0)).has_value());
  BOOST_TEST(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 2u);
  // The other instance's copy is due too: its refresh reads Redis first and adopts.
  Served theirs = f.serve(f.widget(0), &other);
  BOOST_REQUIRE(theirs.ok());
  BOOST_TEST(ServiceFixture::eventually([&] {
    auto copy = other.l1.get(api::cache_key(f.widget(0)));
    return copy && copy->stored_at > f.clock.wall_now() - 1min;
  }));
  BOOST_TEST(f.upstream_calls() == 2u);
}

BOOST_AUTO_TEST_CASE(a_reload_that_lowers_max_ttl_holds_cached_entries_from_their_next_read) {
  ServiceFixture f;
  Served first = f.serve(f.widget(0));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(cache_status(first) == "widget-gateway; fwd=uri-miss; stored; ttl=3600");
  Served page = f.serve(f.reviews(0, 10));
  BOOST_REQUIRE(page.ok());
  f.clock.advance(10min);

  // SIGHUP with max_ttl 1h -> 20min, applied on the worker's thread as the gateway does.
  config::Config lowered = f.config;
  lowered.cache.max_ttl = 20min;
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    f.main().core.apply(lowered, lowered.cache.l1_max_bytes);
    co_return true;
  });
  const std::uint64_t calls = f.upstream_calls();

  // L1: the hit path answers with the copy held to the new cap (stored 10 min ago: 10 left).
  std::optional<Served> hit = from_l1(f, f.widget(0));
  BOOST_REQUIRE(hit.has_value());
  BOOST_TEST(cache_status(*hit) == "widget-gateway; hit; ttl=600");
  BOOST_TEST((hit->entry->stored_at == first.entry->stored_at));
  BOOST_TEST(hit->entry->body == first.entry->body);
  std::optional<Served> page_hit = from_l1(f, f.reviews(0, 10));
  BOOST_REQUIRE(page_hit.has_value());
  BOOST_TEST(cache_status(*page_hit) == "widget-gateway; hit; ttl=600; detail=derived");

  // L2: an instance configured so (another one, or after a restart) holds what Redis has to
  // it too.
  f.config = lowered;
  Instance& other = f.add_instance();
  Served from_redis = f.serve(f.widget(0), &other);
  BOOST_REQUIRE(from_redis.ok());
  BOOST_TEST(cache_status(from_redis) == "widget-gateway; hit; ttl=600");
  BOOST_TEST(f.upstream_calls() == calls);

  // And past the new cap the copy is stale, refreshed in the background as any other.
  f.clock.advance(11min);
  Served stale = f.serve(f.widget(0));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::while_revalidate);
  BOOST_TEST(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == calls + 1);
}

BOOST_AUTO_TEST_CASE(entries_are_compressed_on_demand_once_per_coding) {
  ServiceFixture f;
  const api::ApiRequest request = f.reviews(0, 40);
  Served page = f.serve(request);
  BOOST_REQUIRE(page.ok());
  BOOST_REQUIRE((page.outcome.detail == Outcome::Detail::derived));
  // Cut on a miss, not compressed: most such pages are asked for once, many in identity.
  BOOST_TEST(page.entry->compress_on_demand);
  BOOST_TEST(page.entry->variants.empty());
  const std::string key = api::cache_key(request);
  const std::size_t charged = f.main().l1.bytes();

  // Each coding is made into a copy that replaces the page in L1; the copy an answer in
  // flight holds does not change.
  auto add = [&](std::shared_ptr<const cache::Entry> entry, std::string_view coding) {
    return f.run<std::shared_ptr<const cache::Entry>>(
        [&]() -> boost::asio::awaitable<std::shared_ptr<const cache::Entry>> {
          co_return f.service().forms().with_coding(key, entry, coding);
        });
  };
  const auto in_flight = page.entry;
  const auto br = add(page.entry, "br");
  BOOST_TEST(in_flight->variants.empty());
  BOOST_REQUIRE_EQUAL(br->variants.size(), 1u);
  BOOST_TEST(br->variants[0].first == "br");
  BOOST_TEST(compress::brotli_decompress(br->variants[0].second).value_or("") == br->body);
  BOOST_TEST(br->body == in_flight->body);
  BOOST_TEST(f.main().l1.get(key) == br);
  BOOST_TEST(add(br, "br") == br);  // once per coding
  const auto both = add(br, "gzip");
  BOOST_REQUIRE_EQUAL(both->variants.size(), 2u);
  BOOST_TEST(both->variants[1].first == "gzip");
  BOOST_TEST(br->variants.size() == 1u);
  BOOST_TEST(add(both, "gzip") == both);  // every coding made: nothing more
  BOOST_TEST(f.main().l1.get(key) == both);
  // L1 charges the page again with what it now holds.
  BOOST_TEST(f.main().l1.bytes() > charged);
  // A copy L1 no longer holds (a newer one is there) is coded for its answer, not stored.
  const auto answer_only = add(in_flight, "gzip");
  BOOST_TEST(answer_only->variants.size() == 1u);
  BOOST_TEST(f.main().l1.get(key) == both);

  // Entries fetched from upstream are compressed on demand too, and stored without codings.
  Served widget = f.serve(f.widget(0));
  BOOST_REQUIRE(widget.ok());
  BOOST_TEST(widget.entry->compress_on_demand);
  BOOST_TEST(widget.entry->variants.empty());
  const auto gzipped = f.run<std::shared_ptr<const cache::Entry>>(
      [&]() -> boost::asio::awaitable<std::shared_ptr<const cache::Entry>> {
        co_return f.service().forms().with_coding(api::cache_key(f.widget(0)), widget.entry,
                                                  "gzip");
      });
  BOOST_REQUIRE_EQUAL(gzipped->variants.size(), 1u);
  BOOST_TEST(compress::gzip_decompress(gzipped->variants[0].second).value_or("") == gzipped->body);

  // So is a copy read from Redis (by another instance): its holder makes its own codings.
  Instance& other = f.add_instance();
  Served theirs = f.serve(f.widget(0), &other);
  BOOST_REQUIRE(theirs.ok());
  BOOST_TEST((theirs.outcome.source == Outcome::Source::cache));
  BOOST_TEST(theirs.entry->compress_on_demand);
  BOOST_TEST(theirs.entry->variants.empty());
}

BOOST_AUTO_TEST_CASE(a_fetch_lock_is_claimed_once_and_tells_of_a_newer_copy) {
  ServiceFixture f;
  FetchLock& lock = f.main().lock;
  const std::string key = "wg:{lock-test}:w:lock";
  const std::string entry_key = "wg:{lock-test}:g0.0:w";
  using State = FetchLock::Claim::State;
  auto claim = [&](FetchLock::Known known, const FetchLock::Guard* guard = nullptr) {
    return f.run<FetchLock::Claim>([&]() -> boost::asio::awaitable<FetchLock::Claim> {
      co_return co_await lock.claim(key, entry_key, 5s, known, f.clock.wall_now(), WallTime{},
                                    guard);
    });
  };
  FetchLock::Claim first = claim({});
  BOOST_TEST((first.state == State::acquired));
  BOOST_TEST((claim({}).state == State::busy));  // held, fetching

  // Stored: "done" in the lock, and the copy in Redis. A claim by a worker whose copy is older
  // is told to read it; one whose copy is that very copy takes the lock (a refresh is due).
  cache::Entry stored;
  stored.stored_at = f.clock.wall_now();
  stored.fresh_until = stored.stored_at + 1h;
  stored.stale_until = stored.fresh_until + 1h;
  stored.body = "{}";
  f.redis_server.command({"SET", entry_key, cache::encode_entry(stored)});
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await lock.mark_done(key, "", "");
    co_return true;
  });
  const FetchLock::Known older{stored.stored_at - 1h, stored.stored_at};
  FetchLock::Claim late = claim(older);
  BOOST_TEST((late.state == State::newer));
  BOOST_TEST(
      (late.redis.stored_at == std::chrono::floor<std::chrono::milliseconds>(stored.stored_at)));
  BOOST_TEST(f.redis_server.command({"GET", key}) == "done");  // nothing taken
  // The same copy with a longer freshness (a hold written back) is newer too.
  BOOST_TEST((claim({stored.stored_at, stored.fresh_until - 1min}).state == State::newer));
  // Newer but no longer fresh, or older than a soft purge: not worth reading.
  f.clock.advance(2h);
  FetchLock::Claim due = claim(older);
  BOOST_TEST((due.state == State::acquired));  // "done" is taken over
  BOOST_TEST(f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_return co_await lock.wait_released(key, 50ms);
  }) == false);  // held again
  // A failed fetch deletes its own lock only.
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await lock.release(key, "0123456789abcdef");  // not the holder's token
    co_return true;
  });
  BOOST_TEST((claim({}).state == State::busy));
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await lock.release(key, due.token);
    co_return true;
  });
  BOOST_TEST((claim({}).state == State::acquired));
}

BOOST_AUTO_TEST_CASE(the_guard_counts_a_fetch_when_it_starts) {
  // One count per claim taken, whatever the answer; a failure gives its count back.
  ServiceFixture f;
  FetchLock& lock = f.main().lock;
  FetchLock::Guard guard{"wg:{g}:spent:1", "wg:{g}:pace:1",
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             (f.clock.wall_now() + 1h).time_since_epoch())
                             .count()};
  auto claim = [&](const std::string& key) {
    return f.run<FetchLock::Claim>([&]() -> boost::asio::awaitable<FetchLock::Claim> {
      co_return co_await lock.claim(key, "wg:{g}:g0.0:" + key, 5s, {}, f.clock.wall_now(),
                                    WallTime{}, &guard);
    });
  };
  std::vector<FetchLock::Claim> claims;
  for (int i = 0; i < 5; ++i) claims.push_back(claim("wg:{g}:r:*:300:" + std::to_string(i * 300)));
  for (int i = 0; i < 5; ++i) {
    BOOST_TEST((claims[i].state == FetchLock::Claim::State::acquired));
    BOOST_TEST(claims[i].spent == static_cast<std::uint64_t>(i));  // counted before it
  }
  BOOST_TEST(f.redis_server.command({"HGET", guard.counter, "n"}) == "5");
  // A busy claim reserves nothing.
  BOOST_TEST((claim("wg:{g}:r:*:300:0").state == FetchLock::Claim::State::busy));
  BOOST_TEST(f.redis_server.command({"HGET", guard.counter, "n"}) == "5");
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await lock.release("wg:{g}:r:*:300:0", claims[0].token, &guard);
    co_return true;
  });
  BOOST_TEST(f.redis_server.command({"HGET", guard.counter, "n"}) == "4");
  const auto reserved = f.run<std::optional<std::uint64_t>>(
      [&]() -> boost::asio::awaitable<std::optional<std::uint64_t>> {
        co_return co_await lock.reserve(guard);
      });
  BOOST_TEST(reserved.value_or(99) == 4u);
  BOOST_TEST(f.redis_server.command({"HGET", guard.counter, "n"}) == "5");
}

BOOST_AUTO_TEST_CASE(a_window_in_l1_is_not_read_again_with_the_widget_data) {
  ServiceFixture f;
  // Pages only: the widget data is never cached, so every page's proof lookup goes to Redis,
  // and the first window must not come along again once it is in L1.
  BOOST_REQUIRE(f.serve(f.reviews(0, 10)).ok());
  const std::string window_key = api::cache_key(f.reviews(0, 300, 0));
  auto window = f.main().l1.get(window_key);
  BOOST_REQUIRE(window);
  const std::uint64_t before = redis_commands(f.redis_server);
  Served other_page = f.serve(f.reviews(0, 20, 40));
  BOOST_REQUIRE(other_page.ok());
  BOOST_TEST((f.main().l1.get(window_key) == window));  // the same copy, offsets and all
  // The widget data's lookup (one GET: it is not cached) and nothing for the window.
  BOOST_TEST(redis_commands(f.redis_server) - before == 1u);
  BOOST_TEST(f.upstream_calls() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()  // service_cache_test
