#include "connection_deadline.hpp"

#include <algorithm>

namespace wg::http {

struct ConnectionDeadline::State {
  State(const Executor& executor, const Clock& clock, std::function<void()> on_passed)
      : timer(executor), clock(clock), on_passed(std::move(on_passed)) {}

  SteadyTimer timer;
  const Clock& clock;
  std::function<void()> on_passed;
  SteadyTime at = SteadyTime::max();        // the deadline; max: none
  SteadyTime wakes_at = SteadyTime::max();  // when the started timer wakes up
  bool armed = false;                       // a wake-up is pending
  bool passed = false;
  bool stopped = false;
  std::uint64_t generation = 0;  // of the pending wake-up: a superseded one does nothing
  std::uint64_t starts = 0;
};

ConnectionDeadline::ConnectionDeadline(const Executor& executor, const Clock& clock,
                                       std::function<void()> on_passed)
    : state_(std::make_shared<State>(executor, clock, std::move(on_passed))) {}

ConnectionDeadline::~ConnectionDeadline() {
  stop();
}

void ConnectionDeadline::set(SteadyTime at) {
  State& s = *state_;
  s.at = at;
  s.passed = false;
  if (!s.stopped && (!s.armed || at < s.wakes_at)) arm(state_);
}

void ConnectionDeadline::clear() {
  state_->at = SteadyTime::max();
  state_->passed = false;
}

bool ConnectionDeadline::passed() const {
  return state_->passed;
}

SteadyTime ConnectionDeadline::now() const {
  return state_->clock.steady_now();
}

void ConnectionDeadline::check() {
  check(state_);
}

void ConnectionDeadline::check(const std::shared_ptr<State>& state) {
  State& s = *state;
  if (s.stopped || s.at == SteadyTime::max()) return;
  if (s.clock.steady_now() >= s.at) {
    s.at = SteadyTime::max();
    s.passed = true;
    if (s.on_passed) s.on_passed();
  } else if (!s.armed) {
    arm(state);
  }
}

void ConnectionDeadline::stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  s.on_passed = nullptr;
  s.armed = false;
  s.timer.cancel();
}

std::uint64_t ConnectionDeadline::timer_starts() const {
  return state_->starts;
}

void ConnectionDeadline::arm(const std::shared_ptr<State>& state) {
  State& s = *state;
  s.armed = true;
  s.wakes_at = s.at;
  ++s.starts;
  const std::uint64_t generation = ++s.generation;
  // Restarting cancels the earlier wait: its wake-up comes with operation_aborted and an older
  // generation, and does nothing.
  s.timer.expires_after(std::max(Duration::zero(), s.at - s.clock.steady_now()));
  s.timer.async_wait([state, generation](const boost::system::error_code& ec) {
    if (ec || generation != state->generation || state->stopped) return;
    state->armed = false;
    check(state);
  });
}

}  // namespace wg::http
