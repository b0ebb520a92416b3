#include "coalescer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <vector>

#include "widget_gateway/common/error.hpp"

namespace wg::serving {
namespace asio = boost::asio;

struct Coalescer::Flight {
  bool done = false;
  FetchOutcome outcome;
  std::vector<std::function<void()>> wakeups;  // one per waiter, bounded by max_waiters_
};

std::size_t Coalescer::in_flight() const {
  std::lock_guard lock(mutex_);
  return flights_.size();
}

bool Coalescer::in_flight(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return flights_.contains(key);
}

asio::awaitable<Coalescer::Result> Coalescer::run(const std::string& key, Fetch fetch,
                                                  std::chrono::milliseconds wait_timeout) {
  std::shared_ptr<Flight> flight;
  bool leader = false;
  {
    std::lock_guard lock(mutex_);
    auto& slot = flights_[key];
    if (!slot) {
      slot = std::make_shared<Flight>();
      leader = true;
    }
    flight = slot;
  }

  if (leader) {
    FetchOutcome outcome;
    try {
      outcome = co_await fetch();
    } catch (const std::exception&) {
      outcome.error = make_error_code(errc::upstream_bad_status);
    }
    std::vector<std::function<void()>> wakeups;
    {
      std::lock_guard lock(mutex_);
      flight->done = true;
      flight->outcome = outcome;
      wakeups.swap(flight->wakeups);
      flights_.erase(key);
    }
    for (auto& wake : wakeups) wake();
    co_return Result{std::move(outcome), false};
  }

  // A waiter sleeps on a timer of its own executor; the leader cancels it through a post, so
  // the timer is only ever touched on that executor.
  auto executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor, wait_timeout);
  {
    std::lock_guard lock(mutex_);
    if (flight->done) co_return Result{flight->outcome, true};
    if (flight->wakeups.size() >= max_waiters_) {
      FetchOutcome overloaded;
      overloaded.error = make_error_code(errc::overloaded);
      co_return Result{std::move(overloaded), true};
    }
    flight->wakeups.push_back(
        [timer, executor] { asio::post(executor, [timer] { timer->cancel(); }); });
  }
  co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  std::lock_guard lock(mutex_);
  if (flight->done) co_return Result{flight->outcome, true};
  FetchOutcome timed_out;
  timed_out.error = make_error_code(errc::upstream_timeout);
  co_return Result{std::move(timed_out), true};
}

}  // namespace wg::serving
