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

std::optional<PrimarySwitch> PrimaryTracker::heard(const PrimarySwitch& announced) {
  Address to{announced.to_host, announced.to_port};
  if (reported_ == to) return std::nullopt;
  reported_ = std::move(to);
  return announced;
}

std::optional<PrimarySwitch> PrimaryTracker::resubscribed(const std::string& master,
                                                          const Address& current) {
  const std::optional<Address> before = std::exchange(reported_, current);
  if (!before || *before == current) return std::nullopt;
  return PrimarySwitch{master, before->first, before->second, current.first, current.second};
}

// What every sentinel's connection shares: the master to listen for, and what was reported.
struct SentinelWatcher::Heard {
  std::string master;
  SwitchHandler on_switch;
  std::mutex mutex;
  PrimaryTracker tracker;  // under mutex

  void on_message(const std::string& sentinel, std::string_view message) {
    auto announced = parse_switch_master(message);
    if (!announced || announced->master != master) return;  // another master, or not ours
    std::lock_guard lock(mutex);
    report(tracker.heard(*announced), sentinel, "announced");
  }

  // A sentinel's answer to SENTINEL get-master-addr-by-name, asked before (re)subscribing.
  void on_primary(const std::string& sentinel, const Reply& reply) {
    if (reply.type != Reply::Type::array || reply.elements.size() != 2) return;
    const auto port = parse_port(reply.elements[1].str);
    if (reply.elements[0].str.empty() || !port) return;
    std::lock_guard lock(mutex);
    report(tracker.resubscribed(master, {reply.elements[0].str, *port}), sentinel,
           "asked after resubscribing");
  }

  void report(const std::optional<PrimarySwitch>& change, const std::string& sentinel,
              std::string_view how) {
    if (!change) return;
    log::info("redis_primary_switched", {{"master", master},
                                         {"from", host_port(change->from_host, change->from_port)},
                                         {"to", host_port(change->to_host, change->to_port)},
                                         {"sentinel", sentinel},
                                         {"how", how}});
    if (on_switch) on_switch(*change);
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
    auto on_answer = [heard = heard_, sentinel = host_port(host, port)](const Reply& reply) {
      heard->on_primary(sentinel, reply);
    };
    auto link = std::make_shared<detail::SubscriberImpl>(
        ex, std::move(one), std::vector<std::string>{kSwitchChannel}, std::move(on_message), random,
        "sentinel watcher", detail::Peer::sentinel);
    // What it may have missed while unsubscribed: the primary now, asked on every connect.
    link->ask_first({"SENTINEL", "get-master-addr-by-name", heard_->master}, std::move(on_answer));
    links_.push_back(std::move(link));
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
