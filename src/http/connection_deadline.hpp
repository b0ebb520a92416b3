#pragma once
// One deadline per connection: the time by which what the connection waits for (a request's
// first byte, the rest of its head, the client taking an answer) must have happened, or the
// connection is cut. One timer serves every wait. Moving the deadline later is a store: the
// timer, when it wakes before the deadline, sleeps again until it. Only a deadline earlier
// than the timer's wake-up arms the timer anew. A per-operation timeout (beast::tcp_stream's)
// arms and cancels a timer around every read and write instead, two scheduler passes each.
//
// Time comes from the injected Clock. The timer waits the difference in real time, and
// `check()`, which its wake-up runs, judges the deadline by the Clock: tests move a
// ManualClock and call it.
//
// Not thread-safe: the connection's executor only (its one io thread).

#include <cstdint>
#include <functional>
#include <memory>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/http/executor.hpp"

namespace wg::http {

class ConnectionDeadline {
 public:
  using Duration = SteadyTime::duration;

  // `on_passed` runs once, on the executor, when the deadline passes: it cuts what the
  // connection waits for (cancels or closes its socket). Never after `stop()`.
  ConnectionDeadline(const Executor& executor, const Clock& clock, std::function<void()> on_passed);
  ~ConnectionDeadline();
  ConnectionDeadline(const ConnectionDeadline&) = delete;
  ConnectionDeadline& operator=(const ConnectionDeadline&) = delete;

  // The connection must make progress by `at` (by the Clock).
  void set(SteadyTime at);
  void set_after(Duration d) { set(now() + d); }
  // Nothing is awaited (a handler runs): no deadline until the next set().
  void clear();
  // Whether the deadline passed (and `on_passed` ran) since the last set().
  bool passed() const;
  SteadyTime now() const;

  // What the timer's wake-up does: when the deadline has passed, marks it and runs
  // `on_passed`; otherwise the timer sleeps until the deadline (nothing while there is none).
  void check();
  // For good: no more wake-ups, `on_passed` never runs again.
  void stop();

  // How many times the timer was started: one per connection while deadlines only move later.
  std::uint64_t timer_starts() const;

 private:
  struct State;
  static void check(const std::shared_ptr<State>& state);
  static void arm(const std::shared_ptr<State>& state);

  // Shared with the timer's pending wake-up, which may run after the connection has gone.
  std::shared_ptr<State> state_;
};

}  // namespace wg::http
