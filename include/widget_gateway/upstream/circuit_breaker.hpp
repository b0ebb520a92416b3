#pragma once
// Consecutive-failure circuit breaker for upstream calls. Closed: every call goes through and
// failures are counted; `failure_threshold` failures in a row open it. Open: calls are
// rejected (the caller answers from cache or 502) until `open_for` has passed. Then the first
// caller gets the single probe (half-open); its success closes the breaker, its failure opens
// it for another `open_for`. Which outcomes are failures is the caller's decision (connect
// errors, timeouts, 5xx and invalid bodies are; 404/400 are answers, not failures).
//
// Time is passed in (steady clock), so tests move it by hand. Thread-safe: one small mutex;
// the transition listener runs after it is released, on the thread that caused the change.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>

#include "widget_gateway/common/clock.hpp"

namespace wg::upstream {

class CircuitBreaker {
 public:
  enum class State : std::uint8_t { closed, open, half_open };
  enum class Permit : std::uint8_t {
    allowed,   // closed: go ahead, then report the outcome
    probe,     // half-open: this caller is the one probe; report its outcome
    rejected,  // open, or half-open with the probe still out: do not call upstream
  };
  // Called with (from, to) on every state change; must not call back into the breaker.
  using Listener = std::function<void(State from, State to)>;

  static constexpr unsigned kDefaultFailureThreshold = 5;
  static constexpr std::chrono::milliseconds kDefaultOpenFor{5000};

  // A threshold of 0 is taken as 1.
  explicit CircuitBreaker(unsigned failure_threshold = kDefaultFailureThreshold,
                          std::chrono::milliseconds open_for = kDefaultOpenFor,
                          Listener listener = {});

  // Open → half-open once the pause is over (and this caller becomes the probe). A probe that
  // reports nothing for `open_for` (its caller was cancelled) is presumed lost, and the next
  // caller becomes a new probe, so a lost outcome cannot keep the breaker half-open forever.
  Permit try_acquire(SteadyTime now);

  // Closed: resets the consecutive count. Half-open: closes. Open: ignored (a call let through
  // before the breaker opened says nothing about the upstream of now).
  void on_success(SteadyTime now);
  // Closed: counts, and opens at the threshold. Half-open: re-opens for another `open_for`.
  // Open: ignored (late outcomes of calls started before opening do not extend the pause).
  void on_failure(SteadyTime now);

  State state() const;
  unsigned consecutive_failures() const;

 private:
  // Called with the lock held.
  void transition(State to, SteadyTime now);
  void notify(State from, State to) const;

  const unsigned failure_threshold_;
  const std::chrono::milliseconds open_for_;
  const Listener listener_;

  mutable std::mutex mutex_;
  State state_ = State::closed;
  unsigned failures_ = 0;
  SteadyTime opened_at_{};
  bool probe_out_ = false;
  SteadyTime probe_at_{};
};

std::string_view to_string(CircuitBreaker::State state);

}  // namespace wg::upstream
