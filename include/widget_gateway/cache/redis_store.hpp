#pragma once
// The shared cache tier (L2): encoded entries in Redis, each expiring with its stale window so
// Redis itself forgets what the gateway may no longer serve.

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "widget_gateway/cache/entry.hpp"

namespace wg::redis {
class Client;
}

namespace wg::cache {

struct Lookup {
  std::error_code ec;                  // Redis unreachable, timed out or errored: treat as a miss
  std::shared_ptr<const Entry> entry;  // null on a miss or an undecodable value
};

class RedisStore {
 public:
  explicit RedisStore(redis::Client& redis) : redis_(redis) {}

  boost::asio::awaitable<Lookup> get(const std::string& key);
  // Stores `entry` until its stale_until. Returns the Redis outcome; callers usually only
  // count failures, since a failed store only costs a later miss.
  boost::asio::awaitable<std::error_code> put(const std::string& key, const Entry& entry);
  boost::asio::awaitable<std::error_code> erase(const std::string& key);

 private:
  redis::Client& redis_;
};

}  // namespace wg::cache
