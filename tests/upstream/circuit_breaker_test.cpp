#include <boost/test/unit_test.hpp>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "widget_gateway/upstream/circuit_breaker.hpp"

using namespace std::chrono;
using wg::SteadyTime;
using Breaker = wg::upstream::CircuitBreaker;
using State = Breaker::State;
using Permit = Breaker::Permit;

namespace {

const SteadyTime t0 = SteadyTime{hours(1)};

void fail(Breaker& breaker, int times, SteadyTime now) {
  for (int i = 0; i < times; ++i) {
    BOOST_REQUIRE(breaker.try_acquire(now) == Permit::allowed);
    breaker.on_failure(now);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(circuit_breaker_test)

BOOST_AUTO_TEST_CASE(four_failures_stay_closed_five_open) {
  Breaker breaker(5, seconds(10));
  BOOST_TEST((breaker.state() == State::closed));
  fail(breaker, 1, t0);
  BOOST_TEST((breaker.state() == State::closed));  // one failure never opens it
  fail(breaker, 3, t0);
  BOOST_TEST((breaker.state() == State::closed));
  BOOST_TEST(breaker.consecutive_failures() == 4u);
  fail(breaker, 1, t0);
  BOOST_TEST((breaker.state() == State::open));
}

BOOST_AUTO_TEST_CASE(success_resets_the_consecutive_count) {
  Breaker breaker(5, seconds(10));
  fail(breaker, 4, t0);
  breaker.on_success(t0);
  BOOST_TEST(breaker.consecutive_failures() == 0u);
  fail(breaker, 4, t0);
  BOOST_TEST((breaker.state() == State::closed));
  fail(breaker, 1, t0);
  BOOST_TEST((breaker.state() == State::open));
}

BOOST_AUTO_TEST_CASE(open_rejects_until_the_pause_is_over_then_one_probe) {
  Breaker breaker(5, seconds(10));
  fail(breaker, 5, t0);
  BOOST_TEST((breaker.try_acquire(t0) == Permit::rejected));
  BOOST_TEST((breaker.try_acquire(t0 + milliseconds(9999)) == Permit::rejected));
  // Late outcomes of calls let through before opening change nothing.
  breaker.on_failure(t0 + seconds(9));
  breaker.on_success(t0 + seconds(9));
  BOOST_TEST((breaker.state() == State::open));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(10)) == Permit::probe));
  BOOST_TEST((breaker.state() == State::half_open));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(10)) == Permit::rejected));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(15)) == Permit::rejected));
}

BOOST_AUTO_TEST_CASE(probe_success_closes) {
  Breaker breaker(5, seconds(10));
  fail(breaker, 5, t0);
  BOOST_REQUIRE((breaker.try_acquire(t0 + seconds(10)) == Permit::probe));
  breaker.on_success(t0 + seconds(11));
  BOOST_TEST((breaker.state() == State::closed));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(11)) == Permit::allowed));
  // A fresh count: four failures do not re-open it.
  fail(breaker, 4, t0 + seconds(12));
  BOOST_TEST((breaker.state() == State::closed));
}

BOOST_AUTO_TEST_CASE(probe_failure_reopens_for_another_pause) {
  Breaker breaker(5, seconds(10));
  fail(breaker, 5, t0);
  BOOST_REQUIRE((breaker.try_acquire(t0 + seconds(10)) == Permit::probe));
  breaker.on_failure(t0 + seconds(12));
  BOOST_TEST((breaker.state() == State::open));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(21)) == Permit::rejected));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(22)) == Permit::probe));
}

BOOST_AUTO_TEST_CASE(a_lost_probe_is_replaced_after_a_pause) {
  Breaker breaker(5, seconds(10));
  fail(breaker, 5, t0);
  BOOST_REQUIRE((breaker.try_acquire(t0 + seconds(10)) == Permit::probe));
  // Its caller was cancelled and never reports.
  BOOST_TEST((breaker.try_acquire(t0 + seconds(19)) == Permit::rejected));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(20)) == Permit::probe));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(20)) == Permit::rejected));
}

BOOST_AUTO_TEST_CASE(threshold_is_configurable_and_at_least_one) {
  Breaker three(3, seconds(1));
  fail(three, 3, t0);
  BOOST_TEST((three.state() == State::open));
  Breaker zero(0, seconds(1));
  fail(zero, 1, t0);
  BOOST_TEST((zero.state() == State::open));
}

BOOST_AUTO_TEST_CASE(listener_sees_every_transition) {
  std::vector<std::pair<State, State>> seen;
  Breaker breaker(2, seconds(1), [&](State from, State to) { seen.emplace_back(from, to); });
  fail(breaker, 2, t0);
  BOOST_REQUIRE((breaker.try_acquire(t0 + seconds(1)) == Permit::probe));
  breaker.on_failure(t0 + seconds(1));
  BOOST_REQUIRE((breaker.try_acquire(t0 + seconds(2)) == Permit::probe));
  breaker.on_success(t0 + seconds(2));
  const std::vector<std::pair<State, State>> expected = {{State::closed, State::open},
                                                         {State::open, State::half_open},
                                                         {State::half_open, State::open},
                                                         {State::open, State::half_open},
                                                         {State::half_open, State::closed}};
  BOOST_TEST((seen == expected));
  BOOST_TEST(wg::upstream::to_string(State::half_open) == "half_open");
}

BOOST_AUTO_TEST_CASE(concurrent_callers_get_exactly_one_probe) {
  for (int round = 0; round < 50; ++round) {
    Breaker breaker(5, seconds(10));
    fail(breaker, 5, t0);
    std::atomic<int> probes{0};
    std::atomic<int> rejected{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < 100; ++i) {
          const Permit permit = breaker.try_acquire(t0 + seconds(10));
          if (permit == Permit::probe) ++probes;
          if (permit == Permit::rejected) ++rejected;
        }
      });
    }
    go = true;
    for (auto& thread : threads) thread.join();
    BOOST_REQUIRE(probes.load() == 1);
    BOOST_REQUIRE(rejected.load() == 799);
  }
}

BOOST_AUTO_TEST_CASE(rejects_answers_like_try_acquire_without_taking_the_probe) {
  Breaker breaker(5, seconds(10));
  BOOST_TEST(!breaker.rejects(t0));  // closed
  fail(breaker, 5, t0);
  BOOST_TEST(breaker.rejects(t0));
  BOOST_TEST(breaker.rejects(t0 + milliseconds(9999)));
  // The pause is over: not rejected, and asking changes nothing (still open, probe free).
  BOOST_TEST(!breaker.rejects(t0 + seconds(10)));
  BOOST_TEST(!breaker.rejects(t0 + seconds(10)));
  BOOST_TEST((breaker.state() == State::open));
  BOOST_TEST((breaker.try_acquire(t0 + seconds(10)) == Permit::probe));
  // Half-open with the probe out: rejected until a lost probe may be replaced.
  BOOST_TEST(breaker.rejects(t0 + seconds(11)));
  BOOST_TEST(!breaker.rejects(t0 + seconds(20)));
  breaker.on_success(t0 + seconds(11));
  BOOST_TEST(!breaker.rejects(t0 + seconds(11)));  // closed again
}

BOOST_AUTO_TEST_CASE(the_pause_starts_short_and_doubles_per_failed_probe_up_to_open_for) {
  Breaker breaker(5, seconds(30), {}, seconds(1));
  fail(breaker, 5, t0);
  BOOST_TEST(breaker.rejects(t0 + milliseconds(999)));
  SteadyTime now = t0 + seconds(1);
  // Failed probes: the next pauses are 2, 4, 8, 16, then 30 (the cap), 30 s.
  for (seconds pause :
       {seconds(2), seconds(4), seconds(8), seconds(16), seconds(30), seconds(30)}) {
    BOOST_TEST_CONTEXT("pause " << pause.count() << "s") {
      BOOST_REQUIRE((breaker.try_acquire(now) == Permit::probe));
      breaker.on_failure(now);
      BOOST_TEST((breaker.try_acquire(now + pause - milliseconds(1)) == Permit::rejected));
      now += pause;
    }
  }
  // A successful probe closes it; the next opening starts with the short pause again.
  BOOST_REQUIRE((breaker.try_acquire(now) == Permit::probe));
  breaker.on_success(now);
  BOOST_TEST((breaker.state() == State::closed));
  fail(breaker, 5, now);
  BOOST_TEST(breaker.rejects(now + milliseconds(999)));
  BOOST_TEST((breaker.try_acquire(now + seconds(1)) == Permit::probe));
}

BOOST_AUTO_TEST_CASE(until_half_open_counts_down_the_current_pause) {
  Breaker breaker(5, seconds(30), {}, seconds(1));
  BOOST_TEST(breaker.until_half_open(t0).count() == 0);  // closed
  fail(breaker, 5, t0);
  BOOST_TEST(breaker.until_half_open(t0).count() == 1000);
  BOOST_TEST(breaker.until_half_open(t0 + milliseconds(400)).count() == 600);
  BOOST_TEST(breaker.until_half_open(t0 + seconds(5)).count() == 0);  // over, not yet probed
  // A failed probe doubles the pause, and the count starts from the probe's failure.
  BOOST_REQUIRE((breaker.try_acquire(t0 + seconds(5)) == Permit::probe));
  BOOST_TEST(breaker.until_half_open(t0 + seconds(5)).count() == 0);  // half-open
  breaker.on_failure(t0 + seconds(6));
  BOOST_TEST(breaker.until_half_open(t0 + seconds(6)).count() == 2000);
  BOOST_TEST(breaker.until_half_open(t0 + milliseconds(7500)).count() == 500);
}

BOOST_AUTO_TEST_SUITE_END()  // circuit_breaker_test
