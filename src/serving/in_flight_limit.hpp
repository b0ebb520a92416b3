#pragma once
// upstream.max_in_flight and upstream.max_queued for one worker: at most `limit` upstream
// requests at once, at most `max_waiting` more waiting for one (first come, first served),
// each waiting no longer than it is told. Past that, the caller answers 503 at once rather
// than let a queue of misses grow without bound in front of a slow upstream.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

namespace wg::serving {

// Threads: one per worker, used on its thread only (no lock).
class InFlightLimit {
 public:
  InFlightLimit(std::size_t limit, std::size_t max_waiting);

  // Held while one upstream request is in flight; gives its place to the next waiter.
  class Slot {
   public:
    Slot(Slot&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    friend class InFlightLimit;
    explicit Slot(InFlightLimit* owner) : owner_(owner) {}
    InFlightLimit* owner_;
  };

  // A slot, or nullopt when the queue is full or `max_wait` passed first.
  boost::asio::awaitable<std::optional<Slot>> acquire(std::chrono::milliseconds max_wait);

  std::size_t in_flight() const { return in_flight_; }
  std::size_t waiting() const { return waiters_.size(); }

 private:
  struct Waiter;
  void release();

  const std::size_t limit_;
  const std::size_t max_waiting_;
  std::size_t in_flight_ = 0;
  std::deque<Waiter*> waiters_;
};

}  // namespace wg::serving
