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

// The lock's value once the fetch it guarded was stored (tokens are 16 hex digits).
constexpr std::string_view kDone = "done";

constexpr std::string_view kReleaseScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
)lua";

// KEYS[1] lock; ARGV[1] token; ARGV[2] ttl (ms). 1 when the lock said "done" and is now ours.
constexpr std::string_view kTakeOverScript = R"lua(
if redis.call('GET', KEYS[1]) == 'done' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
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
  const std::string key = keys_.unversioned(lock_key);
  std::vector<std::string> args{"SET", key, held.token, "NX", "PX", std::to_string(ttl.count())};
  if (set_nx_get_) args.emplace_back("GET");
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (!ec && reply.is_error() && set_nx_get_ && reply.str.find("syntax") != std::string::npos) {
    // Redis before 7.0: NX and GET do not combine. Two commands from now on.
    set_nx_get_ = false;
    co_return co_await try_acquire(lock_key, ttl);
  }
  if (ec || reply.is_error()) co_return Held{};
  held.shared = true;
  if (set_nx_get_) {
    // The old value: nil when the key was free (and is now ours).
    held.acquired = reply.is_nil();
    held.done = reply.type == redis::Reply::Type::string && reply.str == kDone;
  } else {
    held.acquired = reply.type == redis::Reply::Type::status;  // "OK"; nil when already held
    if (!held.acquired) {
      std::vector<std::string> get{"GET", key};
      auto [get_ec, value] = co_await redis_.command(std::move(get));
      held.done = !get_ec && value.type == redis::Reply::Type::string && value.str == kDone;
    }
  }
  co_return held;
}

asio::awaitable<FetchLock::Held> FetchLock::take_over_done(const std::string& lock_key,
                                                           std::chrono::milliseconds ttl) {
  Held held;
  held.token = random_token(random_);
  std::vector<std::string> args{"EVAL",     std::string(kTakeOverScript),
                                "1",        keys_.unversioned(lock_key),
                                held.token, std::to_string(ttl.count())};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec || reply.is_error()) co_return Held{};
  held.shared = true;
  held.acquired = reply.type == redis::Reply::Type::integer && reply.integer == 1;
  co_return held;
}

asio::awaitable<void> FetchLock::mark_done(const std::string& lock_key) {
  std::vector<std::string> args{"SET", keys_.unversioned(lock_key), std::string(kDone), "PX",
                                std::to_string(kDoneFor.count())};
  co_await redis_.command(std::move(args));
}

asio::awaitable<void> FetchLock::release(const std::string& lock_key, const std::string& token) {
  if (token.empty()) co_return;
  std::vector<std::string> args{"EVAL", std::string(kReleaseScript), "1",
                                keys_.unversioned(lock_key), token};
  co_await redis_.command(std::move(args));
}

asio::awaitable<bool> FetchLock::wait_released(const std::string& lock_key,
                                               std::chrono::milliseconds max_wait) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto deadline = std::chrono::steady_clock::now() + max_wait;
  std::chrono::milliseconds interval(10);
  const std::string key = keys_.unversioned(lock_key);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<std::string> args{"GET", key};
    auto [ec, reply] = co_await redis_.command(std::move(args));
    if (ec || reply.is_error()) co_return false;
    if (reply.is_nil() || reply.str == kDone) co_return true;
    timer.expires_after(interval);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    interval = std::min(interval * 2, std::chrono::milliseconds(200));
  }
  co_return false;
}

}  // namespace wg::serving
