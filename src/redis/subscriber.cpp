#include "widget_gateway/redis/subscriber.hpp"

#include "redis/link.hpp"
#include "redis/reply.hpp"
#include "widget_gateway/common/log.hpp"

namespace wg::redis {
namespace detail {

namespace asio = boost::asio;

class SubscriberImpl final : public Link {
 public:
  SubscriberImpl(asio::any_io_executor ex, Settings settings, std::vector<std::string> channels,
                 Subscriber::MessageHandler on_message, RandomSource& random)
      : Link(std::move(ex), std::move(settings), "subscriber", random),
        channels_(std::move(channels)),
        on_message_(std::move(on_message)) {}

  ~SubscriberImpl() override { close_connection_now(); }

 private:
  asio::awaitable<bool> on_open(SteadyTime deadline) override {
    confirmed_ = 0;
    if (channels_.empty()) co_return true;
    std::vector<std::string> args{"SUBSCRIBE"};
    args.insert(args.end(), channels_.begin(), channels_.end());
    Connection* conn = current_connection();
    if (conn == nullptr || !conn->send(args, &SubscriberImpl::on_push, this)) co_return false;
    // Up only once every subscription is confirmed: nothing published after that is missed.
    Predicate confirmed = [this, conn] {
      return confirmed_ >= channels_.size() || stopping() || !conn->is_open();
    };
    co_await wait_until(confirmed, deadline);
    co_return confirmed_ >= channels_.size();
  }

  // hiredis calls this for the confirmation of each channel and for every message; with a null
  // reply when the context goes away (nothing to do: the link reports the disconnect).
  static void on_push(redisAsyncContext*, void* reply, void* privdata) {
    if (reply == nullptr) return;
    auto* self = static_cast<SubscriberImpl*>(privdata);
    const auto& r = *static_cast<redisReply*>(reply);
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 3 || r.element[0]->type != REDIS_REPLY_STRING) {
      return;
    }
    std::string_view kind(r.element[0]->str, r.element[0]->len);
    if (kind == "subscribe") {
      ++self->confirmed_;
      self->notify();
    } else if (kind == "message" && r.element[1]->type == REDIS_REPLY_STRING &&
               r.element[2]->type == REDIS_REPLY_STRING) {
      std::string_view channel(r.element[1]->str, r.element[1]->len);
      std::string_view message(r.element[2]->str, r.element[2]->len);
      std::lock_guard lock(self->callback_mutex());
      if (!self->callbacks_detached() && self->on_message_) self->on_message_(channel, message);
    }
  }

  std::vector<std::string> channels_;
  Subscriber::MessageHandler on_message_;
  std::size_t confirmed_ = 0;
};

}  // namespace detail

Subscriber::Subscriber(boost::asio::any_io_executor ex, Settings settings,
                       std::vector<std::string> channels, MessageHandler on_message,
                       RandomSource& random)
    : impl_(std::make_shared<detail::SubscriberImpl>(
          std::move(ex), std::move(settings), std::move(channels), std::move(on_message), random)) {
}

Subscriber::~Subscriber() {
  impl_->detach_callbacks();
  impl_->stop();
}

void Subscriber::start() {
  impl_->start();
}
void Subscriber::stop() {
  impl_->stop();
}
bool Subscriber::connected() const noexcept {
  return impl_->connected();
}

void Subscriber::on_state_change(std::function<void(bool)> listener) {
  impl_->on_state_change(std::move(listener));
}

}  // namespace wg::redis
