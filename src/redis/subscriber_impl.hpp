#pragma once
// The Subscriber's connection: a Link that subscribes to fixed channels on every connect and
// delivers their messages. The sentinel watcher uses one per sentinel (Peer::sentinel).

#include <string>
#include <vector>

#include "redis/link.hpp"
#include "widget_gateway/redis/subscriber.hpp"

namespace wg::redis::detail {

class SubscriberImpl final : public Link {
 public:
  SubscriberImpl(boost::asio::any_io_executor ex, Settings settings,
                 std::vector<std::string> channels, Subscriber::MessageHandler on_message,
                 RandomSource& random, std::string role = "subscriber", Peer peer = Peer::data)
      : Link(std::move(ex), std::move(settings), std::move(role), random, peer),
        channels_(std::move(channels)),
        on_message_(std::move(on_message)) {}

  ~SubscriberImpl() override { close_connection_now(); }

  // Before subscribing, on every connection: `command`, its reply to `on_answer` (under the
  // callback mutex, not after detach_callbacks()). Call before start().
  void ask_first(std::vector<std::string> command, std::function<void(const Reply&)> on_answer) {
    ask_first_ = std::move(command);
    on_answer_ = std::move(on_answer);
  }

 private:
  boost::asio::awaitable<bool> on_open(SteadyTime deadline) override {
    confirmed_ = 0;
    if (!ask_first_.empty()) {
      std::optional<Reply> answer = co_await exec_setup(ask_first_, deadline);
      if (answer) {
        std::lock_guard lock(callback_mutex());
        if (!callbacks_detached() && on_answer_) on_answer_(*answer);
      }
    }
    if (channels_.empty()) co_return true;
    std::vector<std::string> args{"SUBSCRIBE"};
    args.insert(args.end(), channels_.begin(), channels_.end());
    Connection* conn = current_connection();
    if (conn == nullptr) co_return false;
    // The confirmations and then the messages arrive as pushes: SUBSCRIBE has no reply of its
    // own. The connection is closed before this object goes away, so `this` stays valid.
    conn->set_push_handler([this](Reply& reply) { on_push(reply); });
    if (!conn->send(args, {})) co_return false;
    // Up only once every subscription is confirmed: nothing published after that is missed.
    Predicate confirmed = [this, conn] {
      return confirmed_ >= channels_.size() || stopping() || !conn->is_open();
    };
    co_await wait_until(confirmed, deadline);
    co_return confirmed_ >= channels_.size();
  }

  // Each channel's confirmation, then every message: ["subscribe"|"message", channel, ...].
  void on_push(const Reply& r) {
    if (r.type != Reply::Type::array || r.elements.size() < 3 ||
        r.elements[0].type != Reply::Type::string) {
      return;
    }
    const std::string& kind = r.elements[0].str;
    if (kind == "subscribe") {
      ++confirmed_;
      notify();
    } else if (kind == "message" && r.elements[1].type == Reply::Type::string &&
               r.elements[2].type == Reply::Type::string) {
      std::lock_guard lock(callback_mutex());
      if (!callbacks_detached() && on_message_) on_message_(r.elements[1].str, r.elements[2].str);
    }
  }

  std::vector<std::string> channels_;
  Subscriber::MessageHandler on_message_;
  std::vector<std::string> ask_first_;
  std::function<void(const Reply&)> on_answer_;
  std::size_t confirmed_ = 0;
};

}  // namespace wg::redis::detail
