// The connection's one deadline, with time moved by hand: it passes by the injected clock, not
// by the real time its timer sleeps; moving it later starts no timer.

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>

#include "http/connection_deadline.hpp"
#include "widget_gateway/common/clock.hpp"

using namespace std::chrono_literals;
using wg::ManualClock;
using wg::http::ConnectionDeadline;

namespace {

struct DeadlineFixture {
  boost::asio::io_context ioc;
  ManualClock clock;
  int cuts = 0;
  ConnectionDeadline deadline{ioc.get_executor(), clock, [this] { ++cuts; }};
};

}  // namespace

BOOST_AUTO_TEST_SUITE(connection_deadline_test)

BOOST_FIXTURE_TEST_CASE(passes_when_the_clock_reaches_it, DeadlineFixture) {
  deadline.set_after(10s);
  deadline.check();
  BOOST_TEST(!deadline.passed());
  clock.advance(9s);
  deadline.check();
  BOOST_TEST(!deadline.passed());
  BOOST_TEST(cuts == 0);
  clock.advance(1s);
  deadline.check();
  BOOST_TEST(deadline.passed());
  BOOST_TEST(cuts == 1);
  deadline.check();  // once per deadline
  BOOST_TEST(cuts == 1);
}

BOOST_FIXTURE_TEST_CASE(moving_it_later_starts_no_timer, DeadlineFixture) {
  deadline.set_after(10s);
  BOOST_TEST(deadline.timer_starts() == 1u);
  for (int request = 0; request < 1000; ++request) {
    clock.advance(1ms);
    deadline.set_after(60s);  // between keep-alive requests
    deadline.clear();         // a handler runs
  }
  BOOST_TEST(deadline.timer_starts() == 1u);
  // Earlier than the timer's wake-up: the one case that starts it again.
  deadline.set_after(60s);
  deadline.set_after(5s);
  BOOST_TEST(deadline.timer_starts() == 2u);
}

BOOST_FIXTURE_TEST_CASE(sooner_deadlines_at_one_distance_restart_the_timer_once, DeadlineFixture) {
  // Over TLS: idle between requests (60 s), then each answer's write must progress within
  // 20 s. The first write moves the wake-up earlier; the writes after it are later than that.
  for (int request = 0; request < 1000; ++request) {
    deadline.set_after(60s);  // waiting for the next request
    clock.advance(1ms);
    deadline.set_after(20s);  // the answer's write
    deadline.clear();         // the next request's handler
  }
  BOOST_TEST(deadline.timer_starts() == 2u);
}

BOOST_FIXTURE_TEST_CASE(the_timer_judges_by_the_clock_not_by_real_time, DeadlineFixture) {
  // The timer sleeps 20 ms of real time and finds the clock short of the deadline: it sleeps
  // again, and the deadline does not pass however much real time goes by.
  deadline.set_after(20ms);
  ioc.run_for(100ms);
  BOOST_TEST(!deadline.passed());
  BOOST_TEST(deadline.timer_starts() > 1u);
  // The clock reaches it: the next wake-up cuts.
  clock.advance(20ms);
  ioc.run_for(100ms);
  BOOST_TEST(deadline.passed());
  BOOST_TEST(cuts == 1);
}

BOOST_FIXTURE_TEST_CASE(a_deadline_due_now_is_cut_by_the_timer, DeadlineFixture) {
  deadline.set_after(0s);
  ioc.run();  // returns once the timer has nothing left to wait for
  BOOST_TEST(deadline.passed());
  BOOST_TEST(cuts == 1);
}

BOOST_FIXTURE_TEST_CASE(cleared_or_set_again_it_is_not_judged_stale, DeadlineFixture) {
  deadline.set_after(0s);
  deadline.clear();
  ioc.run();
  BOOST_TEST(!deadline.passed());
  BOOST_TEST(cuts == 0);

  ioc.restart();
  deadline.set_after(0s);
  clock.advance(1s);
  deadline.check();
  BOOST_TEST(deadline.passed());
  deadline.set_after(10s);  // a new wait: the last one's passing is forgotten
  BOOST_TEST(!deadline.passed());
  ioc.run_for(50ms);
  BOOST_TEST(cuts == 1);
}

BOOST_FIXTURE_TEST_CASE(after_stop_nothing_runs, DeadlineFixture) {
  deadline.set_after(0s);
  deadline.stop();
  ioc.run();
  BOOST_TEST(cuts == 0);
  clock.advance(1s);
  deadline.set_after(0s);
  deadline.check();
  BOOST_TEST(cuts == 0);
}

BOOST_AUTO_TEST_CASE(a_wake_up_may_outlive_the_connection) {
  boost::asio::io_context ioc;
  ManualClock clock;
  int cuts = 0;
  {
    ConnectionDeadline deadline(ioc.get_executor(), clock, [&cuts] { ++cuts; });
    deadline.set_after(0s);
  }  // gone with its wake-up pending
  ioc.run();
  BOOST_TEST(cuts == 0);
}

BOOST_AUTO_TEST_SUITE_END()
