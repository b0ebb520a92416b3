#pragma once
// Cross-instance coalescing: a short Redis lock per cache key ("SET key token NX PX ttl"), so
// that of all the gateway instances sharing a Redis only one fetches a cold or expired key;
// the others wait for the entry it stores. The lock expires by itself if its holder dies.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>

#include "widget_gateway/common/random.hpp"

namespace wg::redis {
class Client;
}

namespace wg::serving {

class FetchLock {
 public:
  FetchLock(redis::Client& redis, RandomSource& random) : redis_(redis), random_(random) {}

  struct Held {
    bool acquired = false;  // this caller holds the lock and must fetch
    bool shared = false;    // Redis answered: false means no cross-instance coordination
    std::string token;      // to release only our own lock
  };
  // One attempt. Without Redis, {acquired=false, shared=false}: fetch without coordination.
  boost::asio::awaitable<Held> try_acquire(const std::string& lock_key,
                                           std::chrono::milliseconds ttl);
  // Deletes the lock if it is still ours.
  boost::asio::awaitable<void> release(const std::string& lock_key, const std::string& token);
  // Waits (polling with a growing interval) until the lock is gone or `max_wait` passed.
  // Returns false on timeout, or when Redis became unreachable.
  boost::asio::awaitable<bool> wait_released(const std::string& lock_key,
                                             std::chrono::milliseconds max_wait);

 private:
  redis::Client& redis_;
  RandomSource& random_;
};

// The lock's key for a cache key: same hash tag, so it lives on the same cluster slot.
inline std::string lock_key_for(const std::string& cache_key) {
  return cache_key + ":lock";
}

}  // namespace wg::serving
