#pragma once
// Which widget ids upstream has answered 200 for: remembered fleet-wide in one Redis set
// (across months: a widget valid yesterday is not "unknown" once its cache entry expires) and,
// per process, in a bounded set in front of it, which also carries the process through a Redis
// outage. Ids known nowhere draw on the unknown-id budget (quota.unknown_share,
// access.unknown_per_ip_rate).
//
// The Redis set holds only ids upstream confirmed, so it grows with upstream's catalogue and
// never with what clients make up.

#include <boost/asio/awaitable.hpp>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace wg::redis {
class Client;
}

namespace wg::serving {

inline constexpr std::string_view kKnownWidgetsKey = "wg:known-widgets";

// Threads: process-wide; one small mutex, never held across I/O, taken on the miss path only.
class KnownWidgets {
 public:
  explicit KnownWidgets(std::size_t max_local = 100'000) : max_local_(max_local) {}

  bool known_locally(const std::string& id) const;
  // In this process, else in Redis through `redis` (then remembered here). False when Redis
  // cannot answer: the id is then treated as unknown.
  boost::asio::awaitable<bool> known(redis::Client& redis, std::string id);
  // Upstream answered 200 for `id`: added to Redis through `redis`, and here once Redis has it
  // (so a 200 seen while Redis is away is added by the next one).
  boost::asio::awaitable<void> remember(redis::Client& redis, std::string id);

 private:
  void insert_locally(const std::string& id);

  const std::size_t max_local_;
  mutable std::mutex mutex_;
  std::unordered_set<std::string> local_;
};

}  // namespace wg::serving
