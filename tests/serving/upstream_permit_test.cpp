// The upstream permit with the guard's count in it (src/serving/upstream_permit.hpp), against
// a real redis-server: the count reserved with the fetch lock is kept when upstream's answer
// counts, and goes back on every other end: a refusal, an answer that does not count, and a
// permit dropped unsettled.
#include <boost/test/unit_test.hpp>

#include <boost/asio/this_coro.hpp>

#include "service_fixture.hpp"
#include "serving/guard_reservation.hpp"
#include "serving/in_flight_limit.hpp"
#include "serving/upstream_permit.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;
namespace asio = boost::asio;

namespace {

// A guard of widget "permit" for the test, kept an hour.
FetchLock::Guard test_guard(ServiceFixture& f) {
  FetchLock::Guard guard;
  guard.counter = "wg:{permit}:gtest:spent";
  guard.pace = "wg:{permit}:gtest:pace";
  guard.expires_ms = unix_millis(f.clock.wall_now() + std::chrono::hours(1));
  return guard;
}

const std::string kLockKey = "{permit}:w:lock";

// The guard's count as Redis holds it.
std::string counted(ServiceFixture& f) {
  return f.redis_server.command({"HGET", "wg:{permit}:gtest:spent", "n"});
}

// Reserves one count, then asks for a permit with it from `slots`.
UpstreamPermit::Taken* take_with_count(ServiceFixture& f, InFlightLimit& slots,
                                       std::optional<UpstreamPermit::Taken>& taken) {
  f.run<bool>([&]() -> asio::awaitable<bool> {
    Instance& instance = f.main();
    const FetchLock::Guard guard = test_guard(f);
    const auto before = co_await instance.lock.reserve(guard);
    BOOST_REQUIRE(before.has_value());
    const asio::any_io_executor executor = co_await asio::this_coro::executor;
    std::optional<GuardReservation> reservation;
    reservation.emplace(instance.lock, kLockKey, guard, executor);
    const UpstreamPermit::Sources sources{slots, instance.quota, instance.redis, f.clock, executor};
    taken.emplace(co_await UpstreamPermit::take(sources, std::chrono::milliseconds(0), true,
                                                std::move(reservation)));
    co_return true;
  });
  return &*taken;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(upstream_permit_test)

BOOST_AUTO_TEST_CASE(a_refusal_gives_the_guard_count_back) {
  ServiceFixture f;
  // The worker's one upstream slot is taken, and nobody may wait for it.
  InFlightLimit slots(1, 0);
  std::optional<InFlightLimit::Slot> occupied;
  f.run<bool>([&]() -> asio::awaitable<bool> {
    auto slot = co_await slots.acquire(std::chrono::milliseconds(0));
    if (slot) occupied.emplace(std::move(*slot));
    co_return true;
  });
  BOOST_REQUIRE(occupied.has_value());
  std::optional<UpstreamPermit::Taken> taken;
  auto* result = take_with_count(f, slots, taken);
  const auto* refusal = std::get_if<PermitRefusal>(result);
  BOOST_REQUIRE(refusal != nullptr);
  BOOST_TEST(refusal->error == errc::upstream_busy);
  BOOST_TEST(counted(f) == "0");  // given back before the refusal is answered
  f.run<bool>([&]() -> asio::awaitable<bool> {
    occupied.reset();  // the limit is its worker's: its slot goes back on that thread
    co_return true;
  });
}

BOOST_AUTO_TEST_CASE(an_answer_that_counts_keeps_it_and_one_that_does_not_gives_it_back) {
  ServiceFixture f;
  InFlightLimit slots(2, 0);
  for (const bool counts : {true, false}) {
    BOOST_TEST_CONTEXT("counts " << counts) {
      std::optional<UpstreamPermit::Taken> taken;
      auto* permit = std::get_if<UpstreamPermit>(take_with_count(f, slots, taken));
      BOOST_REQUIRE(permit != nullptr);
      BOOST_TEST(counted(f) == (counts ? "1" : "2"));
      f.run<bool>([&]() -> asio::awaitable<bool> {
        permit->finished(false);
        const UpstreamPermit::Kept kept{.unknown_id = false, .guard_count = counts};
        co_await permit->settle(kept);
        co_return true;
      });
      BOOST_TEST(counted(f) == "1");  // the first kept; the second given back
      f.run<bool>([&]() -> asio::awaitable<bool> {
        taken.reset();  // settled: dropping it gives nothing back twice
        co_return true;
      });
      BOOST_TEST(counted(f) == "1");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_permit_dropped_unsettled_gives_the_count_back_in_the_background) {
  ServiceFixture f;
  InFlightLimit slots(1, 0);
  std::optional<UpstreamPermit::Taken> taken;
  BOOST_REQUIRE(std::holds_alternative<UpstreamPermit>(*take_with_count(f, slots, taken)));
  BOOST_TEST(counted(f) == "1");
  f.run<bool>([&]() -> asio::awaitable<bool> {
    taken.reset();  // an exit that skipped settle(), as an exception would
    co_return true;
  });
  BOOST_TEST(ServiceFixture::eventually([&] { return counted(f) == "0"; }));
}

BOOST_AUTO_TEST_SUITE_END()  // upstream_permit_test
