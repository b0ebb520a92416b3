#include "guard_reservation.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <utility>

namespace wg::serving {
namespace asio = boost::asio;

GuardReservation::GuardReservation(FetchLock& lock, std::string lock_key, FetchLock::Guard guard,
                                   asio::any_io_executor executor)
    : lock_(&lock),
      lock_key_(std::move(lock_key)),
      guard_(std::move(guard)),
      executor_(std::move(executor)) {}

GuardReservation::GuardReservation(GuardReservation&& other) noexcept
    : lock_(other.lock_),
      lock_key_(std::move(other.lock_key_)),
      guard_(std::exchange(other.guard_, std::nullopt)),
      executor_(other.executor_) {}

GuardReservation::~GuardReservation() {
  if (!guard_) return;
  auto late = [lock = lock_, lock_key = std::move(lock_key_),
               guard = std::move(*guard_)]() -> asio::awaitable<void> {
    co_await lock->release(lock_key, {}, &guard);
  };
  asio::co_spawn(executor_, std::move(late), asio::detached);
}

asio::awaitable<void> GuardReservation::give_back(const std::string& token) {
  std::optional<FetchLock::Guard> guard = std::exchange(guard_, std::nullopt);
  if (guard) {
    co_await lock_->release(lock_key_, token, &*guard);
  } else if (!token.empty()) {
    co_await lock_->release(lock_key_, token);
  }
}

}  // namespace wg::serving
