// The send-rate meter alone, with time moved by hand: bytes per interval, not frames, are
// progress; nothing is judged while nothing is pending.

#include <boost/test/unit_test.hpp>
#include <chrono>

#include "http/send_progress.hpp"

using namespace std::chrono_literals;
using wg::http::SendProgress;
using TimePoint = SendProgress::TimePoint;

namespace {

const TimePoint kStart = TimePoint{} + 1000s;

}  // namespace

BOOST_AUTO_TEST_SUITE(send_progress_test)

BOOST_AUTO_TEST_CASE(an_interval_needs_rate_times_interval_bytes) {
  SendProgress progress(1000, 10s);  // 10,000 bytes per 10 s
  BOOST_TEST(progress.required() == 10000u);
  progress.start(kStart);
  BOOST_TEST((progress.deadline() == kStart + 10s));
  progress.sent(9999, kStart + 5s);
  BOOST_TEST(!progress.too_slow(kStart + 9s));
  BOOST_TEST(progress.too_slow(kStart + 10s));
}

BOOST_AUTO_TEST_CASE(a_reader_at_the_rate_is_never_too_slow) {
  SendProgress progress(1000, 10s);
  progress.start(kStart);
  for (int second = 1; second <= 120; ++second) {
    progress.sent(1000, kStart + std::chrono::seconds(second) - 1ms);
    BOOST_TEST(!progress.too_slow(kStart + std::chrono::seconds(second)));
  }
}

BOOST_AUTO_TEST_CASE(a_trickle_of_one_byte_frames_is_too_slow) {
  // The attack the rule answers: a window opened one byte at a time, one frame every 100 ms.
  SendProgress progress(2048, 20s);
  progress.start(kStart);
  TimePoint now = kStart;
  bool closed = false;
  for (int frame = 0; frame < 1000 && !closed; ++frame) {
    now += 100ms;
    progress.sent(1, now);
    closed = progress.too_slow(now);
  }
  BOOST_TEST(closed);
  BOOST_TEST((now == kStart + 20s));  // at the end of the first interval
}

BOOST_AUTO_TEST_CASE(the_deadline_moves_to_the_next_interval_once_this_one_has_its_bytes) {
  SendProgress progress(100, 10s);  // 1,000 bytes per interval
  progress.start(kStart);
  progress.sent(1000, kStart + 1s);
  BOOST_TEST((progress.deadline() == kStart + 20s));
  // Judged at the end of the first interval: fine; the second starts empty.
  BOOST_TEST(!progress.too_slow(kStart + 10s));
  BOOST_TEST((progress.deadline() == kStart + 20s));
  BOOST_TEST(progress.too_slow(kStart + 20s));
}

BOOST_AUTO_TEST_CASE(nothing_is_judged_while_nothing_is_pending) {
  SendProgress progress(1000, 10s);
  BOOST_TEST(!progress.active());
  BOOST_TEST((progress.deadline() == TimePoint::max()));
  BOOST_TEST(!progress.too_slow(kStart + 1h));
  progress.sent(1, kStart);  // ignored
  progress.start(kStart);
  progress.stop();  // drained: the interval is forgotten
  BOOST_TEST(!progress.too_slow(kStart + 1h));
  // Pending again: a fresh interval from then, whatever came before.
  progress.start(kStart + 1h);
  BOOST_TEST((progress.deadline() == kStart + 1h + 10s));
  BOOST_TEST(!progress.too_slow(kStart + 1h + 9s));
  BOOST_TEST(progress.too_slow(kStart + 1h + 10s));
}

BOOST_AUTO_TEST_CASE(start_while_pending_keeps_the_current_interval) {
  SendProgress progress(1000, 10s);
  progress.start(kStart);
  progress.start(kStart + 9s);  // another answer joins the pending ones
  BOOST_TEST((progress.deadline() == kStart + 10s));
}

BOOST_AUTO_TEST_CASE(a_zero_rate_still_needs_a_byte_per_interval) {
  SendProgress progress(0, 10s);
  BOOST_TEST(progress.required() == 1u);
  progress.start(kStart);
  progress.sent(1, kStart + 9s);
  BOOST_TEST(!progress.too_slow(kStart + 10s));
  BOOST_TEST(progress.too_slow(kStart + 20s));
}

BOOST_AUTO_TEST_CASE(bytes_after_a_failed_interval_do_not_undo_it) {
  SendProgress progress(1000, 10s);
  progress.start(kStart);
  progress.sent(1'000'000, kStart + 25s);  // judged first: the first interval was empty
  BOOST_TEST(progress.too_slow(kStart + 25s));
}

BOOST_AUTO_TEST_SUITE_END()  // send_progress_test
