// What an outage costs per request. Stale copies must be served without per-request work that
// can only fail (Redis locks and whole-entry reads, refreshes against an open circuit) and
// without rebuilding derived pages; what stale widget data proves stays an answer. Shown by
// counting Redis commands, upstream calls, refreshes and entry identities, never by timing.
#include <boost/test/unit_test.hpp>
#include <set>
#include <sstream>

#include "service_fixture.hpp"
#include "widget_gateway/common/error.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;
using State = upstream::CircuitBreaker::State;

namespace {

// Fails upstream until the circuit opens (5 consecutive failures on cold keys 40..44).
void open_the_circuit(ServiceFixture& f) {
  f.faults().set(stub::FaultMode::status503, std::nullopt, stub::FaultEndpoint::any);
  for (std::size_t i = 40; i < 45; ++i) BOOST_REQUIRE(!f.serve(f.widget(i)).ok());
  BOOST_REQUIRE((f.main().breaker.state() == State::open));
}

// Admits every client and counts the unknown-id tokens taken and given back.
struct CountingAdmission : Admission {
  bool admit(std::chrono::seconds&) override { return true; }
  bool admit_unknown(std::chrono::seconds&) override {
    ++unknown_taken;
    return true;
  }
  void refund_unknown() override { ++unknown_refunded; }
  int unknown_taken = 0;
  int unknown_refunded = 0;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(service_outage_test)

BOOST_AUTO_TEST_SUITE(outage)

BOOST_AUTO_TEST_CASE(with_redis_down_a_request_that_never_reached_upstream_costs_no_unknown_token) {
  // A quota limit and no lease yet: with Redis stopped nothing may go upstream.
  ServiceFixture f([](config::Config& config) { config.quota.monthly_limit = 100000; });
  f.redis_server.stop();
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return !f.main().redis.connected(); }));

  CountingAdmission admission;
  const api::ApiRequest request = f.widget(3);  // outlives the coroutine that reads it
  const Served failed = f.run<Served>([&]() { return f.service().serve(request, &admission); });
  BOOST_TEST(!failed.ok());
  BOOST_TEST(f.upstream_calls() == 0u);
  BOOST_TEST(admission.unknown_taken == 1);
  BOOST_TEST(admission.unknown_refunded == 1);
}

BOOST_AUTO_TEST_CASE(with_the_circuit_open_stale_copies_cost_no_redis_and_no_refresh) {
  ServiceFixture f;
  // Widget 1's data is cached too: a window-shaped page first asks it for a local proof.
  const std::vector<api::ApiRequest> keys{f.widget(0), f.widget(1), f.reviews(0, 20),
                                          f.reviews(1, 300)};
  for (const auto& key : keys) BOOST_REQUIRE(f.serve(key).ok());
  f.clock.advance(1h + 1min);  // stale, inside stale-while-revalidate
  open_the_circuit(f);
  const std::uint64_t calls = f.upstream_calls();

  const std::uint64_t before = redis_commands(f.redis_server);
  for (int round = 0; round < 5; ++round) {
    for (const auto& key : keys) {
      Served stale = f.serve(key);
      BOOST_REQUIRE(stale.ok());
      BOOST_TEST(stale.outcome.stale() == StaleReason::while_revalidate);
      // A refresh could only end in circuit_open: none is started.
      BOOST_TEST(f.service().background_refreshes() == 0u);
    }
  }
  // No lock, no whole-entry read, no quota count per request: L1 answers alone.
  BOOST_TEST(redis_commands(f.redis_server) == before);
  BOOST_TEST(f.upstream_calls() == calls);

  // Past the pause upstream is back: the next request serves stale and its refresh is the
  // probe that closes the circuit.
  f.faults().set(stub::FaultMode::none, std::nullopt, stub::FaultEndpoint::any);
  f.clock.advance(31s);
  BOOST_TEST(f.serve(f.widget(0)).outcome.stale() == StaleReason::while_revalidate);
  BOOST_REQUIRE(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == calls + 1);
  BOOST_TEST((f.main().breaker.state() == State::closed));
  Served fresh = f.serve(f.widget(0));
  BOOST_REQUIRE(fresh.ok());
  BOOST_TEST(fresh.outcome.stale() == StaleReason::none);
}

BOOST_AUTO_TEST_CASE(with_the_circuit_open_past_swr_stale_if_error_takes_no_redis_lock) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  f.clock.advance(1h + 11min);  // past stale-while-revalidate: a fetch with stale-if-error
  open_the_circuit(f);
  const std::uint64_t calls = f.upstream_calls();

  // The first request still looks for another instance's copy in Redis (one GET); after
  // that the refused fetch costs nothing: no lock (SET NX), no release, no second read.
  Served first = f.serve(f.widget(0));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(first.outcome.stale() == StaleReason::if_error);
  BOOST_TEST(first.upstream_error == make_error_code(errc::circuit_open));
  const std::uint64_t before = redis_commands(f.redis_server);
  Served second = f.serve(f.widget(0));
  BOOST_REQUIRE(second.ok());
  BOOST_TEST(second.outcome.stale() == StaleReason::if_error);
  BOOST_TEST(redis_commands(f.redis_server) - before <= 1u);  // the one GET for other copies
  BOOST_TEST(f.upstream_calls() == calls);

  // A cold key fails at once with circuit_open, also without the lock.
  const std::uint64_t cold_before = redis_commands(f.redis_server);
  Served cold = f.serve(f.widget(7));
  BOOST_TEST(!cold.ok());
  BOOST_TEST(cold.upstream_error == make_error_code(errc::circuit_open));
  BOOST_TEST(redis_commands(f.redis_server) - cold_before <= 2u);  // generations + GET
  BOOST_TEST(f.upstream_calls() == calls);
}

BOOST_AUTO_TEST_CASE(a_page_cut_from_a_stale_window_is_cut_once) {
  ServiceFixture f;
  BOOST_REQUIRE(f.serve(f.reviews(0, 20)).ok());
  f.clock.advance(1h + 1min);
  open_the_circuit(f);

  Served first = f.serve(f.reviews(0, 20));
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(first.outcome.stale() == StaleReason::while_revalidate);
  BOOST_TEST((first.outcome.source == Outcome::Source::cache));
  for (int i = 0; i < 5; ++i) {
    Served again = f.serve(f.reviews(0, 20));
    BOOST_REQUIRE(again.ok());
    BOOST_TEST(again.outcome.stale() == StaleReason::while_revalidate);
    // The very same page object: not parsed, sliced and compressed again per request.
    BOOST_TEST(again.entry == first.entry);
  }

  // Once the window is refreshed the page is cut anew from it.
  f.faults().set(stub::FaultMode::none, std::nullopt, stub::FaultEndpoint::any);
  f.clock.advance(31s);
  BOOST_REQUIRE(f.serve(f.reviews(0, 20)).ok());
  BOOST_REQUIRE(f.refreshes_done());
  Served fresh = f.serve(f.reviews(0, 20));
  BOOST_REQUIRE(fresh.ok());
  BOOST_TEST(fresh.outcome.stale() == StaleReason::none);
  BOOST_TEST(fresh.entry != first.entry);
  BOOST_TEST((fresh.entry->stored_at > first.entry->stored_at));
  BOOST_TEST(fresh.entry->body == first.entry->body);
}

BOOST_AUTO_TEST_CASE(waiters_for_one_cold_window_share_one_derived_page) {
  ServiceFixture f;
  f.faults().set_latency(300ms);  // the requests really overlap the one window fetch
  auto results = f.serve_concurrently(f.reviews(2, 20), 40);
  std::set<const cache::Entry*> pages;
  for (const Served& served : results) {
    BOOST_REQUIRE(served.ok());
    pages.insert(served.entry.get());
  }
  BOOST_TEST(f.upstream_calls() == 1u);
  // One page per io thread at most (two derive only if they resume at the same moment), not
  // one per waiter.
  BOOST_TEST(pages.size() <= 2u);
}

BOOST_AUTO_TEST_CASE(stale_widget_data_still_proves_a_page_empty) {
  ServiceFixture f;
  Served widget = f.serve(f.widget(0));
  BOOST_REQUIRE(widget.ok());
  const api::ApiRequest past_the_end = f.reviews(0, 20, 1000000);  // no widget has that many
  Served local = f.serve(past_the_end);
  BOOST_REQUIRE(local.ok());
  BOOST_TEST((local.outcome.detail == Outcome::Detail::local));
  BOOST_TEST(f.upstream_calls() == 1u);  // proven by the widget data, no upstream call

  // Stale widget data within stale-while-revalidate: the proof is served like the data, and
  // the data (not the page's window) is refreshed in the background.
  f.clock.set_wall(default_start() + 61min);
  f.faults().set_latency(300ms);
  Served swr = f.serve(past_the_end);
  BOOST_REQUIRE(swr.ok());
  BOOST_TEST((swr.outcome.source == Outcome::Source::cache));  // local, served stale
  BOOST_TEST(swr.outcome.stale() == StaleReason::while_revalidate);
  BOOST_TEST(swr.entry->body == "[]");
  BOOST_TEST((swr.entry->stored_at == widget.entry->stored_at));  // as old as its proof
  BOOST_REQUIRE(f.refreshes_done());
  BOOST_TEST(f.upstream_calls() == 2u);
  BOOST_TEST(f.upstream_reviews_calls() == 0u);
  Served renewed = f.serve(past_the_end);
  BOOST_REQUIRE(renewed.ok());
  BOOST_TEST(renewed.outcome.stale() == StaleReason::none);

  // Past stale-while-revalidate the page's window is asked for; when upstream fails, the
  // stale widget data is served as stale-if-error, and so is what it proves.
  f.faults().set_latency(0ms);
  f.clock.set_wall(default_start() + 23h);
  f.faults().set(stub::FaultMode::status503, std::nullopt, stub::FaultEndpoint::any);
  Served page = f.serve(past_the_end);
  BOOST_REQUIRE(page.ok());
  BOOST_TEST((page.outcome.source == Outcome::Source::cache));  // local, served stale
  BOOST_TEST(page.outcome.stale() == StaleReason::if_error);
  BOOST_TEST(page.entry->body == "[]");
  BOOST_TEST(f.upstream_reviews_calls() == 1u);
  Served data = f.serve(f.widget(0));
  BOOST_REQUIRE(data.ok());
  BOOST_TEST(data.outcome.stale() == StaleReason::if_error);

  // Past stale-if-error of the widget data nothing proves it any more.
  f.clock.set_wall(default_start() + 61min + 25h);
  BOOST_TEST(!f.serve(past_the_end).ok());
}

BOOST_AUTO_TEST_CASE(with_redis_stopped_hits_and_misses_do_not_wait_for_the_command_deadline) {
  // A 30 s Redis deadline: a request that waited for it would outlast the 10 s bound below.
  ServiceFixture f([](config::Config& config) { config.redis.timeout = 30s; });
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  f.redis_server.stop();
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return !f.main().redis.connected(); }));

  std::vector<std::future<Served>> started;
  started.push_back(f.start_serve(f.widget(0)));       // an L1 hit
  started.push_back(f.start_serve(f.widget(1)));       // a miss: straight to upstream
  started.push_back(f.start_serve(f.reviews(2, 20)));  // a derived page: window + widget
  for (auto& future : started) {
    BOOST_REQUIRE_MESSAGE(future.wait_for(10s) == std::future_status::ready,
                          "a request waited for Redis while it was down");
    BOOST_TEST(future.get().ok());
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // service_outage_test
