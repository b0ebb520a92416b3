#include "widget_gateway/upstream/circuit_breaker.hpp"

#include <algorithm>
#include <utility>

namespace wg::upstream {

CircuitBreaker::CircuitBreaker(unsigned failure_threshold, std::chrono::milliseconds open_for,
                               Listener listener, std::chrono::milliseconds first_open_for)
    : failure_threshold_(std::max(failure_threshold, 1u)),
      open_for_(open_for),
      first_open_for_(std::min(first_open_for, open_for)),
      listener_(std::move(listener)),
      pause_(first_open_for_) {}

void CircuitBreaker::transition(State to, SteadyTime now) {
  if (to == State::open) {
    // A failed probe doubles the pause; opening from closed starts over.
    pause_ = state_ != State::half_open ? first_open_for_
             : pause_ > open_for_ / 2   ? open_for_
                                        : pause_ * 2;
    opened_at_ = now;
    probe_out_ = false;
  }
  if (to == State::closed) failures_ = 0;
  if (to == State::half_open) {
    probe_out_ = true;
    probe_at_ = now;
  }
  state_ = to;
}

void CircuitBreaker::notify(State from, State to) const {
  if (listener_) listener_(from, to);
}

CircuitBreaker::Permit CircuitBreaker::try_acquire(SteadyTime now) {
  std::unique_lock lock(mutex_);
  switch (state_) {
    case State::closed:
      return Permit::allowed;
    case State::open: {
      if (now - opened_at_ < pause_) return Permit::rejected;
      transition(State::half_open, now);
      lock.unlock();
      notify(State::open, State::half_open);
      return Permit::probe;
    }
    case State::half_open:
      if (probe_out_ && now - probe_at_ < open_for_) return Permit::rejected;
      probe_out_ = true;
      probe_at_ = now;
      return Permit::probe;
  }
  return Permit::rejected;
}

bool CircuitBreaker::rejects(SteadyTime now) const {
  std::lock_guard lock(mutex_);
  switch (state_) {
    case State::closed:
      return false;
    case State::open:
      return now - opened_at_ < pause_;
    case State::half_open:
      return probe_out_ && now - probe_at_ < open_for_;
  }
  return true;
}

std::chrono::milliseconds CircuitBreaker::until_half_open(SteadyTime now) const {
  std::lock_guard lock(mutex_);
  if (state_ != State::open) return std::chrono::milliseconds(0);
  const auto left =
      pause_ - std::chrono::duration_cast<std::chrono::milliseconds>(now - opened_at_);
  return std::max(left, std::chrono::milliseconds(0));
}

void CircuitBreaker::on_success(SteadyTime now) {
  std::unique_lock lock(mutex_);
  switch (state_) {
    case State::closed:
      failures_ = 0;
      return;
    case State::open:
      return;
    case State::half_open:
      transition(State::closed, now);
      lock.unlock();
      notify(State::half_open, State::closed);
      return;
  }
}

void CircuitBreaker::on_failure(SteadyTime now) {
  std::unique_lock lock(mutex_);
  switch (state_) {
    case State::closed:
      if (++failures_ < failure_threshold_) return;
      transition(State::open, now);
      lock.unlock();
      notify(State::closed, State::open);
      return;
    case State::open:
      return;
    case State::half_open:
      transition(State::open, now);
      lock.unlock();
      notify(State::half_open, State::open);
      return;
  }
}

CircuitBreaker::State CircuitBreaker::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

unsigned CircuitBreaker::consecutive_failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

std::string_view to_string(CircuitBreaker::State state) {
  switch (state) {
    case CircuitBreaker::State::closed:
      return "closed";
    case CircuitBreaker::State::open:
      return "open";
    case CircuitBreaker::State::half_open:
      return "half_open";
  }
  return "unknown";
}

}  // namespace wg::upstream
