#pragma once
// A second Redis connection in SUBSCRIBE mode, e.g. for cache invalidation messages.

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis {

// Subscribes to fixed channels, delivers their messages, and subscribes again after every
// reconnect (messages published while disconnected are lost: listeners of on_state_change
// decide what that means, e.g. dropping a local cache). All public members are thread-safe.
class Subscriber {
 public:
  using MessageHandler = std::function<void(std::string_view channel, std::string_view message)>;

  // `on_message` runs on the subscriber's strand; no callback runs after the destructor returns.
  Subscriber(boost::asio::any_io_executor ex, Settings settings, std::vector<std::string> channels,
             MessageHandler on_message, RandomSource& random = DefaultRandom::instance());
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  void start();
  void stop();
  // True once every channel's subscription is confirmed, until the connection drops.
  bool connected() const noexcept;
  // Called on the subscriber's strand whenever it goes up (true) or down (false).
  void on_state_change(std::function<void(bool connected)> listener);
  // Sentinel mode: as Client::use_primary (messages published meanwhile are lost, as across
  // any reconnect).
  void use_primary(std::string host, std::uint16_t port);

 private:
  std::shared_ptr<detail::SubscriberImpl> impl_;
};

}  // namespace wg::redis
