#pragma once
// Consecutive-failure circuit breaker for upstream calls. Closed: every call goes through and
// failures are counted; `failure_threshold` failures in a row open it. Open: calls are
// rejected (the caller answers from cache or 502) until the pause has passed. Then the first
// caller gets the single probe (half-open); its success closes the breaker, its failure opens
// it for another pause. The pause starts at `first_open_for` and doubles after each failed
// probe up to `open_for`, so a short upstream blip costs a short pause while a long outage is
// probed rarely; by default both are `open_for` (a fixed pause). Which outcomes are failures is
// the caller's decision (connect errors, timeouts, 5xx and invalid bodies are; 404/400 are
// answers, not failures).
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
                          Listener listener = {},
                          std::chrono::milliseconds first_open_for = kSameAsOpenFor);
  // For first_open_for: every pause is open_for.
  static constexpr std::chrono::milliseconds kSameAsOpenFor = std::chrono::milliseconds::max();

  // Open → half-open once the pause is over (and this caller becomes the probe). A probe that
  // reports nothing for `open_for` (its caller was cancelled) is presumed lost, and the next
  // caller becomes a new probe, so a lost outcome cannot keep the breaker half-open forever.
  Permit try_acquire(SteadyTime now);
  // Whether try_acquire(now) would answer `rejected`, without taking the probe or changing
  // state: lets callers skip work (a background refresh, its Redis lock and lookups) that
  // could only end in circuit_open.
  bool rejects(SteadyTime now) const;
  // While open: how long until the pause ends and the next caller becomes the probe (what a
  // caller refused now may be told to wait). Zero when closed or half-open.
  std::chrono::milliseconds until_half_open(SteadyTime now) const;

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
  const std::chrono::milliseconds open_for_;        // the longest pause
  const std::chrono::milliseconds first_open_for_;  // the pause after closed → open
  const Listener listener_;

  mutable std::mutex mutex_;
  State state_ = State::closed;
  unsigned failures_ = 0;
  SteadyTime opened_at_{};
  std::chrono::milliseconds pause_;  // of the current (or next) open period
  bool probe_out_ = false;
  SteadyTime probe_at_{};
};

std::string_view to_string(CircuitBreaker::State state);

}  // namespace wg::upstream
