#include "process/fleet_links.hpp"

#include <charconv>

#include "widget_gateway/common/log.hpp"

namespace wg::process {

std::optional<StoredCopy> parse_stored_message(std::string_view message) {
  const auto first = message.find(' ');
  const auto second = first == std::string_view::npos ? first : message.find(' ', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const auto parse = [](std::string_view text, long long& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} && end == text.data() + text.size();
  };
  long long stored_ms = 0;
  long long fresh_ms = 0;
  if (!parse(message.substr(0, first), stored_ms) ||
      !parse(message.substr(first + 1, second - first - 1), fresh_ms)) {
    return std::nullopt;
  }
  return StoredCopy{WallTime{std::chrono::milliseconds(stored_ms)},
                    WallTime{std::chrono::milliseconds(fresh_ms)},
                    std::string(message.substr(second + 1))};
}

FleetLinks::FleetLinks(boost::asio::any_io_executor control, const redis::Settings& settings,
                       const KeySpace& keys, FleetListener& listener)
    : listener_(listener),
      keys_(keys),
      redis_(control, settings),
      store_(redis_, generations_, keys),
      channels_(control, settings, {keys.purge_channel(), keys.stored_channel()},
                [this](std::string_view channel, std::string_view message) {
                  if (channel == keys_.stored_channel()) {
                    on_stored(message);
                  } else {
                    on_purge(message);
                  }
                }) {
  if (settings.sentinel) {
    sentinel_watcher_ = std::make_unique<redis::SentinelWatcher>(
        control, settings,
        [this](const redis::PrimarySwitch& to) { use_primary(to.to_host, to.to_port); });
  }
  // Purges announced while this instance could not hear them are lost: after any reconnect it
  // forgets the generations it knew, and every worker its L1.
  channels_.on_state_change([this](bool up) {
    if (!up) return;
    generations_.clear();
    listener_.clear_l1_when_redis_up();
  });
}

void FleetLinks::start() {
  redis_.start();
  channels_.start();
  if (sentinel_watcher_) sentinel_watcher_->start();
}

void FleetLinks::stop() {
  redis_.stop();
  channels_.stop();
  if (sentinel_watcher_) sentinel_watcher_->stop();
}

void FleetLinks::on_purge(std::string_view message) {
  auto prefix = store_.apply_purge_message(message);
  if (!prefix) {
    log::warn("purge_message_malformed", {{"message", message}});
    return;
  }
  listener_.erase_everywhere(*prefix);
}

// Every worker drops an older copy of the key, so none answers the older one after this.
void FleetLinks::on_stored(std::string_view message) {
  if (auto stored = parse_stored_message(message)) {
    listener_.drop_older(stored->key, stored->stored_at, stored->fresh_until);
  }
}

// On the control thread (the watcher's): every Redis connection of the process follows the
// announced primary, each on its own thread.
void FleetLinks::use_primary(const std::string& host, std::uint16_t port) {
  redis_.use_primary(host, port);
  channels_.use_primary(host, port);
  listener_.use_redis_primary(host, port);
}

}  // namespace wg::process
