#include "in_flight_limit.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace wg::serving {
namespace asio = boost::asio;

struct InFlightLimit::Waiter {
  asio::steady_timer timer;
  bool granted = false;  // a released slot was handed over: in_flight_ already counts it
};

InFlightLimit::InFlightLimit(std::size_t limit, std::size_t max_waiting)
    : limit_(std::max<std::size_t>(limit, 1)), max_waiting_(max_waiting) {}

InFlightLimit::Slot::~Slot() {
  if (owner_ != nullptr) owner_->release();
}

asio::awaitable<std::optional<InFlightLimit::Slot>> InFlightLimit::acquire(
    std::chrono::milliseconds max_wait) {
  if (in_flight_ < limit_ && waiters_.empty()) {
    ++in_flight_;
    co_return Slot(this);
  }
  if (waiters_.size() >= max_waiting_) co_return std::nullopt;
  auto executor = co_await asio::this_coro::executor;
  Waiter waiter{asio::steady_timer(executor, max_wait)};
  waiters_.push_back(&waiter);
  // Woken by release() (cancelled) or by the deadline; `granted` tells which, even when both
  // happened before this coroutine resumed.
  co_await waiter.timer.async_wait(asio::as_tuple(asio::use_awaitable));
  if (waiter.granted) co_return Slot(this);
  std::erase(waiters_, &waiter);
  co_return std::nullopt;
}

void InFlightLimit::release() {
  if (!waiters_.empty()) {
    Waiter* next = waiters_.front();
    waiters_.pop_front();
    next->granted = true;  // the slot passes on: in_flight_ stays
    next->timer.cancel();
    return;
  }
  --in_flight_;
}

}  // namespace wg::serving
