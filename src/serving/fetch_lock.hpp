#pragma once
// Cross-instance (and cross-worker) coalescing: a short Redis lock per cache key ("SET lock
// token NX PX ttl"), so that of all the gateway instances sharing a Redis only one fetches a
// cold or expired key; the others wait for the entry it stores. The lock expires by itself if
// its holder dies.
//
// After a successful fetch the holder leaves the value "done" in the lock for a moment
// (kDoneFor) instead of deleting it: a request whose lookup missed just before the entry was
// stored then fails to take the lock and reads the entry, instead of fetching again. That
// closes the race without a Redis read under the lock on every upstream trip.
//
// Callers name a lock by lock_key_for(cache key), a logical name; the lock lives in Redis
// under KeySpace::unversioned of it: in the widget's hash tag, without purge generations.
//
// The per-widget guard (docs/request-cost.md) lives beside the lock, in the same hash slot:
// a hash counting the widget's stored fetches in the freshness period under its purge
// generations, read by the same script that takes the lock and bumped by the one that marks
// it done, so that it costs no round trip of its own.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "widget_gateway/cache/key_space.hpp"
#include "widget_gateway/common/random.hpp"

namespace wg::redis {
class Client;
}

namespace wg::serving {

class FetchLock {
 public:
  FetchLock(redis::Client& redis, RandomSource& random, cache::KeySpace keys = cache::KeySpace())
      : redis_(redis), random_(random), keys_(std::move(keys)) {}

  // How long "done" stays: it must outlast the gap between a request's lookup and its lock
  // attempt (a few Redis round trips), and stay short next to any entry's freshness.
  static constexpr std::chrono::milliseconds kDoneFor{2000};

  // Where the guard of one key's widget keeps its count (Redis keys, generations included,
  // same hash tag as the lock) and until when the count's period runs.
  struct Guard {
    std::string counter;          // hash: "n" stored fetches, "paced" set once the widget is paced
    std::string pace;             // the widget's one paced call per pace interval
    std::int64_t expires_ms = 0;  // the period's end (ms since the epoch), when the count goes
  };

  struct Held {
    bool acquired = false;    // this caller holds the lock and must fetch
    bool shared = false;      // Redis answered: false means no cross-instance coordination
    bool done = false;        // not acquired: a fetch of this key has just been stored
    std::string token;        // to release only our own lock
    std::uint64_t spent = 0;  // with a guard: the widget's stored fetches in the period
  };
  // One attempt (one command: SET ... NX GET, or SET NX then GET on a Redis before 7.0; with
  // a guard one script that also reads the count). Without Redis, {acquired=false,
  // shared=false}: fetch without coordination.
  boost::asio::awaitable<Held> try_acquire(const std::string& lock_key,
                                           std::chrono::milliseconds ttl,
                                           const Guard* guard = nullptr);
  // Takes a lock that says "done" (a fetch this caller already knows the result of, or one
  // whose entry is gone since: a purge): acquired unless someone took it first.
  boost::asio::awaitable<Held> take_over_done(const std::string& lock_key,
                                              std::chrono::milliseconds ttl,
                                              const Guard* guard = nullptr);
  // The fetch was stored: marks the lock "done" for kDoneFor (whoever holds it now), and with
  // a guard counts the fetch, in one command.
  boost::asio::awaitable<void> mark_done(const std::string& lock_key, const Guard* guard = nullptr);
  // Counts a stored fetch made without the lock (its holder was lost).
  boost::asio::awaitable<void> count_stored(const std::string& lock_key, const Guard& guard);

  // A paced widget: takes its one call per `interval`. `first` says whether this is the
  // widget's first pacing in the period (fleet-wide), for the one log line.
  struct Pace {
    bool taken = false;
    bool first = false;
    std::chrono::milliseconds left{0};  // when not taken: until the next call may go
    bool shared = false;                // Redis answered
  };
  boost::asio::awaitable<Pace> take_pace(const Guard& guard, std::chrono::milliseconds interval);
  // Keeps a held lock alive while its holder is still at work (waiting for an upstream slot,
  // then the exchange): from the call until `stop()`, the lock's expiry is pushed back to
  // `ttl` every third of it, as long as it still holds `token`. Waiters wait as before (each
  // round at most `ttl`); only a holder that is gone lets the lock expire.
  class Heartbeat {
   public:
    Heartbeat(FetchLock& lock, boost::asio::any_io_executor ex, std::string lock_key,
              std::string token, std::chrono::milliseconds ttl);
    ~Heartbeat() { stop(); }
    Heartbeat(const Heartbeat&) = delete;
    Heartbeat& operator=(const Heartbeat&) = delete;
    void stop();

   private:
    struct State;
    std::shared_ptr<State> state_;
  };

  // The fetch failed: deletes the lock if it is still ours, so waiters try themselves.
  boost::asio::awaitable<void> release(const std::string& lock_key, const std::string& token);
  // Waits (polling with a growing interval) until the lock is gone or "done", or the pauses
  // between polls add up to `max_wait`. Returns false on timeout, or when Redis became
  // unreachable.
  boost::asio::awaitable<bool> wait_released(const std::string& lock_key,
                                             std::chrono::milliseconds max_wait);

 private:
  // One push of `token`'s lock expiry to `ttl`; false when the lock is no longer `token`'s.
  boost::asio::awaitable<bool> extend(const std::string& lock_key, const std::string& token,
                                      std::chrono::milliseconds ttl);

  redis::Client& redis_;
  RandomSource& random_;
  const cache::KeySpace keys_;
  bool set_nx_get_ = true;  // cleared when Redis (before 7.0) refuses SET with NX and GET
};

// The lock's logical name for a logical cache key: same hash tag, so it lives on the same
// cluster slot as the widget's entries.
inline std::string lock_key_for(const std::string& cache_key) {
  return cache_key + ":lock";
}

}  // namespace wg::serving
