#pragma once
// Which widget ids upstream has answered 200 for: remembered fleet-wide in one Redis set
// (across months: a widget valid yesterday is not "unknown" once its cache entry expires) and,
// per process, in a bounded set in front of it, which also carries the process through a Redis
// outage. Ids known nowhere draw on the unknown-id budget (quota.unknown_share,
// access.unknown_per_ip_rate).
//
// The Redis set (KeySpace::known_widgets) holds only ids upstream confirmed, so it grows with
// upstream's catalogue and never with what clients make up.

#include <boost/asio/awaitable.hpp>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "widget_gateway/common/key_space.hpp"

namespace wg::redis {
class Client;
}

namespace wg::serving {

// Threads: process-wide; one small mutex, never held across I/O, taken on the miss path only.
class KnownWidgets {
 public:
  explicit KnownWidgets(const KeySpace& keys = KeySpace(), std::size_t max_local = 100'000)
      : key_(keys.known_widgets()), max_local_(max_local) {}

  bool known_locally(const std::string& id) const;
  // In this process, else in Redis through `redis` (then remembered here). False when Redis
  // cannot answer: the id is then treated as unknown.
  boost::asio::awaitable<bool> known(redis::Client& redis, std::string id);
  // Upstream answered 200 for `id`: known here at once, and to Redis with the next flush().
  void remember(const std::string& id);
  // Adds the ids remembered since the last flush to Redis in one command (the control thread,
  // about once a second); kept for the next one when Redis does not take them.
  boost::asio::awaitable<void> flush(redis::Client& redis);

 private:
  void insert_locally_locked(const std::string& id);

  const std::string key_;
  const std::size_t max_local_;
  mutable std::mutex mutex_;
  std::unordered_set<std::string> local_;
  std::vector<std::string> unflushed_;  // bounded by max_local_
};

}  // namespace wg::serving
