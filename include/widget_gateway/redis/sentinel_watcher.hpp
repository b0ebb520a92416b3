#pragma once
// Sentinel mode: hears the sentinels announce a new primary (`+switch-master`), as the
// Sentinel-aware clients operators know do (Jedis, Lettuce, go-redis), so that every
// connection leaves the old primary at once instead of when Redis closes it. After a manual
// SENTINEL FAILOVER the old primary stays writable for seconds, and what it takes is lost.

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis {

// One `+switch-master` message: "<master> <old-ip> <old-port> <new-ip> <new-port>".
struct PrimarySwitch {
  std::string master;
  std::string from_host;
  std::uint16_t from_port = 0;
  std::string to_host;
  std::uint16_t to_port = 0;
};

// nullopt unless five space-separated fields with ports in 1..65535.
std::optional<PrimarySwitch> parse_switch_master(std::string_view message);

// Which primary the watcher last reported, so that the sentinels repeating an announcement
// report it once; sans I/O. A subscription that was down may have missed announcements, so a
// resubscribed sentinel is asked for the primary (SENTINEL get-master-addr-by-name) and its
// answer is what the watcher knows from then on: a switch missed meanwhile (B back to A) is
// reported then, and a later one (A to B again) is not mistaken for a repeat.
class PrimaryTracker {
 public:
  using Address = std::pair<std::string, std::uint16_t>;
  // An announcement heard: whether to report it (nullopt: a repeat of what was reported).
  std::optional<PrimarySwitch> heard(const PrimarySwitch& announced);
  // A sentinel answered, on (re)subscribing, that `current` is the primary of `master`: the
  // switch to report when it is not what was last reported (nothing the first time: the
  // connections asked the sentinels themselves when they connected).
  std::optional<PrimarySwitch> resubscribed(const std::string& master, const Address& current);

 private:
  std::optional<Address> reported_;
};

// Subscribes to `+switch-master` on every configured sentinel, one connection each, each
// reconnecting with backoff on its own (credentials, TLS and timeouts as for asking them for
// the primary): an announcement is heard from the first sentinel that makes it, as long as one
// is reachable. All public members are thread-safe.
class SentinelWatcher {
 public:
  // Called once per new primary of settings.sentinel->master (however many sentinels repeat
  // it), on the strand of the connection that heard it first, under a lock: it should only
  // post. Never after the destructor returns.
  using SwitchHandler = std::function<void(const PrimarySwitch&)>;

  // `settings` must be in sentinel mode (settings.sentinel set).
  SentinelWatcher(boost::asio::any_io_executor ex, const Settings& settings,
                  SwitchHandler on_switch, RandomSource& random = DefaultRandom::instance());
  ~SentinelWatcher();
  SentinelWatcher(const SentinelWatcher&) = delete;
  SentinelWatcher& operator=(const SentinelWatcher&) = delete;

  void start();
  void stop();
  // How many sentinels it is subscribed to now.
  std::size_t listening() const noexcept;

 private:
  struct Heard;
  std::shared_ptr<Heard> heard_;
  std::vector<std::shared_ptr<detail::SubscriberImpl>> links_;
};

}  // namespace wg::redis
