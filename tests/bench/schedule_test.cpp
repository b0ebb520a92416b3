#include <boost/test/unit_test.hpp>

#include <chrono>
#include <set>

#include "wg-bench/schedule.hpp"

using namespace std::chrono_literals;
using wg::SteadyTime;
using wg::bench::OpenLoopSchedule;

namespace {
const SteadyTime kStart{std::chrono::seconds(1000)};
}

BOOST_AUTO_TEST_SUITE(schedule_test)

BOOST_AUTO_TEST_SUITE(open_loop_schedule)

BOOST_AUTO_TEST_CASE(single_connection_is_evenly_spaced) {
  const OpenLoopSchedule s(kStart, 1000.0, 1, 0);
  BOOST_TEST((s.intended(0) == kStart));
  BOOST_TEST((s.intended(1) == kStart + 1ms));
  BOOST_TEST((s.intended(1000) == kStart + 1s));
}

BOOST_AUTO_TEST_CASE(connections_interleave_into_one_even_sequence) {
  // 4 connections at 400 req/s: together one request every 2.5 ms, each connection every 10 ms.
  std::set<SteadyTime::rep> times;
  for (std::size_t c = 0; c < 4; ++c) {
    const OpenLoopSchedule s(kStart, 400.0, 4, c);
    BOOST_TEST((s.intended(0) == kStart + std::chrono::microseconds(2500 * c)));
    BOOST_TEST((s.intended(1) - s.intended(0) == 10ms));
    for (std::uint64_t j = 0; j < 100; ++j) {
      BOOST_TEST_REQUIRE(times.insert(s.intended(j).time_since_epoch().count()).second);
      BOOST_TEST(s.global_index(j) == c + 4 * j);
    }
  }
  // The union is exactly every 2.5 ms.
  SteadyTime::rep expected = kStart.time_since_epoch().count();
  for (auto t : times) {
    BOOST_TEST_REQUIRE(t == expected);
    expected +=
        std::chrono::duration_cast<SteadyTime::duration>(std::chrono::microseconds(2500)).count();
  }
}

BOOST_AUTO_TEST_CASE(no_drift_over_a_long_run) {
  // 1/3 ms spacing cannot be represented exactly; times come from the index, so after a
  // million requests the error is still below a nanosecond's rounding.
  const OpenLoopSchedule s(kStart, 3000.0, 1, 0);
  const auto t = s.intended(3'000'000);
  BOOST_TEST((t == kStart + 1000s));
  const auto near = s.intended(1'000'000) - kStart;
  BOOST_TEST(std::chrono::abs(near - std::chrono::nanoseconds(333'333'333'333)) <= 1ns);
}

BOOST_AUTO_TEST_CASE(times_do_not_depend_on_when_answers_came) {
  // The schedule is a pure function of the index: asking in any order gives the same times.
  const OpenLoopSchedule s(kStart, 250.0, 3, 2);
  const auto late = s.intended(500);
  const auto early = s.intended(5);
  BOOST_TEST((s.intended(500) == late));
  BOOST_TEST((s.intended(5) == early));
  BOOST_TEST((late - early == std::chrono::milliseconds(12 * 495)));
}

BOOST_AUTO_TEST_CASE(first_at_or_after_and_count_in) {
  const OpenLoopSchedule s(kStart, 100.0, 2, 1);  // this connection: 10 ms, 30 ms, 50 ms, ...
  BOOST_TEST(s.first_at_or_after(kStart - 1s) == 0u);
  BOOST_TEST(s.first_at_or_after(kStart) == 0u);
  BOOST_TEST(s.first_at_or_after(kStart + 10ms) == 0u);
  BOOST_TEST(s.first_at_or_after(kStart + 11ms) == 1u);
  BOOST_TEST(s.first_at_or_after(kStart + 30ms) == 1u);
  BOOST_TEST(s.first_at_or_after(kStart + 1s) == 50u);
  BOOST_TEST(s.count_in(kStart, kStart + 1s) == 50u);
  BOOST_TEST(s.count_in(kStart + 1s, kStart + 2s) == 50u);
  BOOST_TEST(s.count_in(kStart + 2s, kStart + 1s) == 0u);
  for (std::uint64_t j = 0; j < 300; ++j) {
    BOOST_TEST_REQUIRE(s.first_at_or_after(s.intended(j)) == j);
    BOOST_TEST_REQUIRE(s.first_at_or_after(s.intended(j) + 1ns) == j + 1);
  }
}

BOOST_AUTO_TEST_CASE(rejects_bad_arguments) {
  BOOST_CHECK_THROW(OpenLoopSchedule(kStart, 0.0, 1, 0), std::invalid_argument);
  BOOST_CHECK_THROW(OpenLoopSchedule(kStart, -5.0, 1, 0), std::invalid_argument);
  BOOST_CHECK_THROW(OpenLoopSchedule(kStart, 10.0, 0, 0), std::invalid_argument);
  BOOST_CHECK_THROW(OpenLoopSchedule(kStart, 10.0, 2, 2), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // schedule_test
