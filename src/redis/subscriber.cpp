#include "widget_gateway/redis/subscriber.hpp"

#include "redis/subscriber_impl.hpp"

namespace wg::redis {

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

void Subscriber::use_primary(std::string host, std::uint16_t port) {
  impl_->use_primary(std::move(host), port);
}

}  // namespace wg::redis
