#pragma once
// The control thread's ties to the rest of the fleet through Redis: its own connection (admin
// work, quota reports), the purge generations, the purge and "stored" channels (what another
// instance purged or stored reaches every worker here), and in sentinel mode the watcher that
// moves every connection of the process to a new primary. See docs/freshness.md and
// docs/redis-client.md.

#include <memory>
#include <optional>

#include "process/fleet_listener.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/redis/sentinel_watcher.hpp"
#include "widget_gateway/redis/subscriber.hpp"

namespace wg::process {

// A "stored" announcement ("<stored_at ms> <fresh_until ms> <key>", docs/freshness.md).
struct StoredCopy {
  WallTime stored_at;
  WallTime fresh_until;
  std::string key;
};
// Empty when malformed (from a newer version or a bug: dropped).
std::optional<StoredCopy> parse_stored_message(std::string_view message);

class FleetLinks {
 public:
  // On `control`'s thread; `listener` must outlive this.
  FleetLinks(boost::asio::any_io_executor control, const redis::Settings& settings,
             const KeySpace& keys, FleetListener& listener);

  redis::Client& redis() { return redis_; }
  const redis::Client& redis() const { return redis_; }
  cache::Generations& generations() { return generations_; }
  cache::RedisStore& store() { return store_; }

  void start();
  void stop();

 private:
  void on_purge(std::string_view message);
  void on_stored(std::string_view message);
  void use_primary(const std::string& host, std::uint16_t port);

  FleetListener& listener_;
  const KeySpace& keys_;
  redis::Client redis_;
  cache::Generations generations_;
  cache::RedisStore store_;
  redis::Subscriber channels_;  // purges and stored copies
  // Sentinel mode only: hears +switch-master and moves every connection (docs/redis-client.md).
  std::unique_ptr<redis::SentinelWatcher> sentinel_watcher_;
};

}  // namespace wg::process
