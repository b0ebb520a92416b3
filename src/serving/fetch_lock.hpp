#pragma once
// Cross-instance (and cross-worker) coalescing: a short Redis lock per cache key, so that of all
// the gateway instances sharing a Redis only one fetches a key per freshness period; the others
// adopt the copy it stored (docs/freshness.md). The lock expires by itself if its holder dies.
//
// One script claims a key (claim()): it reads the fixed header of the entry stored in Redis
// (GETRANGE, 30 bytes, never the body), and when Redis holds a copy newer than the caller's and
// fresh now it answers `newer` without taking the lock: the caller reads that copy instead of
// asking upstream. Otherwise it takes the lock, unless another fetch holds it, and in the same
// step reserves one count of the widget's guard (docs/request-cost.md): the guard counts a
// fetch when it starts, so a burst of distinct keys cannot all pass the check before any is
// counted. A fetch that fails gives its count back (release()).
//
// After a successful store the holder leaves the value "done" in the lock for a moment
// (kDoneFor) and announces the new copy on the stored channel, in one script: the entry's own
// write when it was placed (done_for()), or mark_done() after it.
//
// Callers name a lock by lock_key_for(cache key), a logical name; the lock lives in Redis
// under KeySpace::unversioned of it: in the widget's hash tag, without purge generations, beside
// the entry and the guard's keys (one slot, so one script may touch them all).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "widget_gateway/cache/lock_done.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/key_space.hpp"
#include "widget_gateway/common/random.hpp"

namespace wg::redis {
class Client;
}

namespace wg::serving {

class FetchLock {
 public:
  FetchLock(redis::Client& redis, RandomSource& random, KeySpace keys = KeySpace())
      : redis_(redis), random_(random), keys_(std::move(keys)) {}

  // How long "done" stays: a short grace for a request whose claim comes just after a store.
  static constexpr std::chrono::milliseconds kDoneFor{2000};

  // Where the guard of one key's widget keeps its count (Redis keys, generations included,
  // same hash tag as the lock) and until when the count's period runs.
  struct Guard {
    std::string counter;          // hash: "n" fetches started, "paced" set once the widget is paced
    std::string pace;             // the widget's one paced call per pace interval
    std::int64_t expires_ms = 0;  // the period's end (ms since the epoch), when the count goes
  };

  // What a claim is measured against: the copy the caller has (zero times: none), the time,
  // and the oldest stored_at a copy may have to count (a soft purge's stamp; older copies are
  // stale whatever their header says).
  struct Known {
    WallTime stored_at{};
    WallTime fresh_until{};
  };
  struct Claim {
    enum class State : std::uint8_t {
      acquired,  // this caller holds the lock (and reserved a guard count) and must fetch
      newer,     // Redis holds a newer copy, fresh now: read it; nothing was taken
      busy,      // another fetch holds the lock
      unshared,  // Redis did not answer: no coordination, no guard
    };
    State state = State::unshared;
    std::string token;        // to release only our own lock
    std::uint64_t spent = 0;  // with a guard: the widget's fetches counted before this one
    Known redis;              // for `newer`: the header of the copy Redis holds
  };
  // One script: the entry's header, the lock, the guard. `entry_key` is the Redis key the
  // fetched copy will be stored under (generations included).
  boost::asio::awaitable<Claim> claim(const std::string& lock_key, const std::string& entry_key,
                                      std::chrono::milliseconds ttl, Known known, WallTime now,
                                      WallTime oldest, const Guard* guard);
  // Reserves a guard count without the lock (its holder stayed busy past every wait): the
  // widget's fetches counted before it; nullopt when Redis did not answer.
  boost::asio::awaitable<std::optional<std::uint64_t>> reserve(const Guard& guard);

  // The fetch was stored: marks the lock "done" for kDoneFor (whoever holds it now), and
  // publishes `message` on `channel` (none when empty), in one command. done_for() is the same
  // for the entry's own write to carry (CacheTier::store with a LockDone): one round trip for
  // both.
  cache::LockDone done_for(const std::string& lock_key, const std::string& channel,
                           const std::string& message) const;
  boost::asio::awaitable<void> mark_done(const std::string& lock_key, const std::string& channel,
                                         const std::string& message);
  // A store made without the lock: only the announcement.
  boost::asio::awaitable<void> announce(const std::string& channel, const std::string& message);

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

  // The fetch failed (or was paced): deletes the lock if it is still ours (`token`; "" for
  // none), so waiters try themselves, and with `give_back` gives the guard count reserved for
  // it back.
  boost::asio::awaitable<void> release(const std::string& lock_key, const std::string& token,
                                       const Guard* give_back = nullptr);
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
  const KeySpace keys_;
};

// The lock's logical name for a logical cache key: same hash tag, so it lives on the same
// cluster slot as the widget's entries.
inline std::string lock_key_for(const std::string& cache_key) {
  return cache_key + ":lock";
}

}  // namespace wg::serving
