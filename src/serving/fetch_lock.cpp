#include "fetch_lock.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

constexpr std::string_view kReleaseScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
)lua";

std::string random_token(RandomSource& random) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(16, '0');
  for (char& c : token) c = kHex[static_cast<int>(random.uniform01() * 16) & 15];
  return token;
}

}  // namespace

asio::awaitable<FetchLock::Held> FetchLock::try_acquire(const std::string& lock_key,
                                                        std::chrono::milliseconds ttl) {
  Held held;
  if (!redis_.connected()) co_return held;
  held.token = random_token(random_);
  std::vector<std::string> args{"SET", lock_key, held.token,
                                "NX",  "PX",     std::to_string(ttl.count())};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec || reply.is_error()) co_return Held{};
  held.shared = true;
  held.acquired = reply.type == redis::Reply::Type::status;  // "OK"; nil when already held
  co_return held;
}

asio::awaitable<void> FetchLock::release(const std::string& lock_key, const std::string& token) {
  if (token.empty()) co_return;
  std::vector<std::string> args{"EVAL", std::string(kReleaseScript), "1", lock_key, token};
  co_await redis_.command(std::move(args));
}

asio::awaitable<bool> FetchLock::wait_released(const std::string& lock_key,
                                               std::chrono::milliseconds max_wait) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto deadline = std::chrono::steady_clock::now() + max_wait;
  std::chrono::milliseconds interval(10);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<std::string> args{"EXISTS", lock_key};
    auto [ec, reply] = co_await redis_.command(std::move(args));
    if (ec) co_return false;
    if (reply.type == redis::Reply::Type::integer && reply.integer == 0) co_return true;
    timer.expires_after(interval);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    interval = std::min(interval * 2, std::chrono::milliseconds(200));
  }
  co_return false;
}

}  // namespace wg::serving
