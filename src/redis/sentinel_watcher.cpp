#include "widget_gateway/redis/sentinel_watcher.hpp"

#include <charconv>
#include <mutex>
#include <utility>

#include "redis/subscriber_impl.hpp"
#include "widget_gateway/common/log.hpp"

namespace wg::redis {

namespace {

constexpr const char* kSwitchChannel = "+switch-master";

std::optional<std::uint16_t> parse_port(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

std::string host_port(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

std::optional<PrimarySwitch> parse_switch_master(std::string_view message) {
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const auto space = message.find(' ', start);
    fields.push_back(message.substr(start, space - start));
    if (fields.back().empty() || fields.size() > 5) return std::nullopt;
    if (space == std::string_view::npos) break;
    start = space + 1;
  }
  if (fields.size() != 5) return std::nullopt;
  auto from_port = parse_port(fields[2]);
  auto to_port = parse_port(fields[4]);
  if (!from_port || !to_port) return std::nullopt;
  return PrimarySwitch{std::string(fields[0]), std::string(fields[1]), *from_port,
                       std::string(fields[3]), *to_port};
}

// What every sentinel's connection shares: the master to listen for, and the last primary
// reported, so that the sentinels repeating an announcement report it once.
struct SentinelWatcher::Heard {
  std::string master;
  SwitchHandler on_switch;
  std::mutex mutex;
  std::optional<std::pair<std::string, std::uint16_t>> reported;  // under mutex

  void on_message(const std::string& sentinel, std::string_view message) {
    auto announced = parse_switch_master(message);
    if (!announced || announced->master != master) return;  // another master, or not ours
    std::lock_guard lock(mutex);
    std::pair<std::string, std::uint16_t> to{announced->to_host, announced->to_port};
    if (reported == to) return;
    reported = std::move(to);
    log::info("redis_primary_switched",
              {{"master", master},
               {"from", host_port(announced->from_host, announced->from_port)},
               {"to", host_port(announced->to_host, announced->to_port)},
               {"sentinel", sentinel}});
    if (on_switch) on_switch(*announced);
  }
};

SentinelWatcher::SentinelWatcher(boost::asio::any_io_executor ex, const Settings& settings,
                                 SwitchHandler on_switch, RandomSource& random)
    : heard_(std::make_shared<Heard>()) {
  heard_->master = settings.sentinel ? settings.sentinel->master : std::string();
  heard_->on_switch = std::move(on_switch);
  if (!settings.sentinel) return;
  for (const auto& [host, port] : settings.sentinel->sentinels) {
    // The sentinel itself, with the data nodes' credentials, TLS and timeouts; it has no db.
    Settings one = settings;
    one.sentinel.reset();
    one.cluster.reset();
    one.endpoint.host = host;
    one.endpoint.port = port;
    one.endpoint.db = 0;
    auto on_message = [heard = heard_, sentinel = host_port(host, port)](std::string_view,
                                                                         std::string_view message) {
      heard->on_message(sentinel, message);
    };
    links_.push_back(std::make_shared<detail::SubscriberImpl>(
        ex, std::move(one), std::vector<std::string>{kSwitchChannel}, std::move(on_message), random,
        "sentinel watcher", detail::Peer::sentinel));
  }
}

SentinelWatcher::~SentinelWatcher() {
  for (auto& link : links_) {
    link->detach_callbacks();
    link->stop();
  }
}

void SentinelWatcher::start() {
  for (auto& link : links_) link->start();
}

void SentinelWatcher::stop() {
  for (auto& link : links_) link->stop();
}

std::size_t SentinelWatcher::listening() const noexcept {
  std::size_t up = 0;
  for (const auto& link : links_) up += link->connected() ? 1 : 0;
  return up;
}

}  // namespace wg::redis
