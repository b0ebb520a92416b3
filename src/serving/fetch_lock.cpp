#include "fetch_lock.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
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

// KEYS[1] lock; ARGV[1] token; ARGV[2] ttl (ms). 1 when the lock was still ours and now lives
// ttl longer.
constexpr std::string_view kExtendScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
)lua";

// KEYS[1] lock, KEYS[2] guard counter (optional); ARGV[1] token; ARGV[2] ttl (ms). {1 when the
// lock said "done" and is now ours, stored fetches in the period}.
constexpr std::string_view kTakeOverScript = R"lua(
local n = 0
if KEYS[2] then n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0') end
if redis.call('GET', KEYS[1]) == 'done' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, n}
end
return {0, n}
)lua";

// KEYS[1] lock, KEYS[2] guard counter; ARGV[1] token, ARGV[2] ttl (ms). {old lock value ("" when
// it was free and is now ours), stored fetches in the period}.
constexpr std::string_view kAcquireScript = R"lua(
local old = redis.call('GET', KEYS[1])
if not old then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
local n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
return {old or '', n}
)lua";

// KEYS[1] lock, KEYS[2] guard counter; ARGV[1] the period's end (ms), ARGV[2] how long "done"
// stays (ms), ARGV[3] "1" to mark the lock done ("0": count only).
constexpr std::string_view kDoneScript = R"lua(
if ARGV[3] == '1' then redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2]) end
local n = redis.call('HINCRBY', KEYS[2], 'n', 1)
redis.call('PEXPIREAT', KEYS[2], ARGV[1])
return n
)lua";

// KEYS[1] pace token, KEYS[2] guard counter; ARGV[1] interval (ms), ARGV[2] the period's end
// (ms). {taken, first pacing of the period, ms until the token frees}.
constexpr std::string_view kPaceScript = R"lua(
local first = redis.call('HSETNX', KEYS[2], 'paced', 1)
if first == 1 then redis.call('PEXPIREAT', KEYS[2], ARGV[2]) end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return {1, first, 0} end
return {0, first, redis.call('PTTL', KEYS[1])}
)lua";

std::string random_token(RandomSource& random) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(16, '0');
  for (char& c : token) c = kHex[static_cast<int>(random.uniform01() * 16) & 15];
  return token;
}

}  // namespace

asio::awaitable<FetchLock::Held> FetchLock::try_acquire(const std::string& lock_key,
                                                        std::chrono::milliseconds ttl,
                                                        const Guard* guard) {
  Held held;
  if (!redis_.connected()) co_return held;
  held.token = random_token(random_);
  const std::string key = keys_.unversioned(lock_key);
  if (guard != nullptr) {
    std::vector<std::string> args{"EVAL",     std::string(kAcquireScript), "2", key, guard->counter,
                                  held.token, std::to_string(ttl.count())};
    auto [ec, reply] = co_await redis_.command(std::move(args));
    if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 2) {
      co_return Held{};
    }
    const redis::Reply& old = reply.elements[0];
    held.shared = true;
    held.acquired = old.type == redis::Reply::Type::string && old.str.empty();
    held.done = old.type == redis::Reply::Type::string && old.str == kDone;
    const redis::Reply& spent = reply.elements[1];
    if (spent.type == redis::Reply::Type::integer && spent.integer > 0) {
      held.spent = static_cast<std::uint64_t>(spent.integer);
    }
    co_return held;
  }
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
                                                           std::chrono::milliseconds ttl,
                                                           const Guard* guard) {
  Held held;
  held.token = random_token(random_);
  std::vector<std::string> args{"EVAL", std::string(kTakeOverScript), guard ? "2" : "1",
                                keys_.unversioned(lock_key)};
  if (guard != nullptr) args.push_back(guard->counter);
  args.push_back(held.token);
  args.push_back(std::to_string(ttl.count()));
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 2) {
    co_return Held{};
  }
  held.shared = true;
  held.acquired = reply.elements[0].integer == 1;
  if (reply.elements[1].integer > 0)
    held.spent = static_cast<std::uint64_t>(reply.elements[1].integer);
  co_return held;
}

asio::awaitable<void> FetchLock::mark_done(const std::string& lock_key, const Guard* guard) {
  if (guard != nullptr) {
    std::vector<std::string> args{"EVAL",
                                  std::string(kDoneScript),
                                  "2",
                                  keys_.unversioned(lock_key),
                                  guard->counter,
                                  std::to_string(guard->expires_ms),
                                  std::to_string(kDoneFor.count()),
                                  "1"};
    co_await redis_.command(std::move(args));
    co_return;
  }
  std::vector<std::string> args{"SET", keys_.unversioned(lock_key), std::string(kDone), "PX",
                                std::to_string(kDoneFor.count())};
  co_await redis_.command(std::move(args));
}

asio::awaitable<void> FetchLock::count_stored(const std::string& lock_key, const Guard& guard) {
  std::vector<std::string> args{"EVAL",
                                std::string(kDoneScript),
                                "2",
                                keys_.unversioned(lock_key),
                                guard.counter,
                                std::to_string(guard.expires_ms),
                                std::to_string(kDoneFor.count()),
                                "0"};
  co_await redis_.command(std::move(args));
}

asio::awaitable<FetchLock::Pace> FetchLock::take_pace(const Guard& guard,
                                                      std::chrono::milliseconds interval) {
  std::vector<std::string> args{"EVAL",
                                std::string(kPaceScript),
                                "2",
                                guard.pace,
                                guard.counter,
                                std::to_string(interval.count()),
                                std::to_string(guard.expires_ms)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  Pace pace;
  if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 3) co_return pace;
  pace.shared = true;
  pace.taken = reply.elements[0].integer == 1;
  pace.first = reply.elements[1].integer == 1;
  pace.left = std::chrono::milliseconds(std::max<long long>(0, reply.elements[2].integer));
  co_return pace;
}

asio::awaitable<void> FetchLock::release(const std::string& lock_key, const std::string& token) {
  if (token.empty()) co_return;
  std::vector<std::string> args{"EVAL", std::string(kReleaseScript), "1",
                                keys_.unversioned(lock_key), token};
  co_await redis_.command(std::move(args));
}

asio::awaitable<bool> FetchLock::extend(const std::string& lock_key, const std::string& token,
                                        std::chrono::milliseconds ttl) {
  std::vector<std::string> args{"EVAL", std::string(kExtendScript),
                                "1",    keys_.unversioned(lock_key),
                                token,  std::to_string(ttl.count())};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  co_return !ec && reply.type == redis::Reply::Type::integer && reply.integer == 1;
}

// Shared by the holder and the detached beat: the beat ends at the first wake-up after stop().
struct FetchLock::Heartbeat::State {
  explicit State(asio::any_io_executor ex) : timer(std::move(ex)) {}
  asio::steady_timer timer;
  bool stopped = false;
};

FetchLock::Heartbeat::Heartbeat(FetchLock& lock, asio::any_io_executor ex, std::string lock_key,
                                std::string token, std::chrono::milliseconds ttl)
    : state_(std::make_shared<State>(ex)) {
  auto beat = [&lock, state = state_, lock_key = std::move(lock_key), token = std::move(token),
               ttl]() -> asio::awaitable<void> {
    for (;;) {
      state->timer.expires_after(ttl / 3);
      co_await state->timer.async_wait(asio::as_tuple(asio::use_awaitable));
      if (state->stopped) co_return;
      if (!co_await lock.extend(lock_key, token, ttl)) co_return;
    }
  };
  asio::co_spawn(ex, std::move(beat), asio::detached);
}

void FetchLock::Heartbeat::stop() {
  if (!state_ || state_->stopped) return;
  state_->stopped = true;
  state_->timer.cancel();
}

asio::awaitable<bool> FetchLock::wait_released(const std::string& lock_key,
                                               std::chrono::milliseconds max_wait) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  // The wait is the sum of the pauses between polls (each poll's round trip comes on top, and
  // a poll that times out ends the wait): no clock to read, so a test's clock can stand still.
  std::chrono::milliseconds waited(0);
  std::chrono::milliseconds interval(10);
  const std::string key = keys_.unversioned(lock_key);
  while (waited < max_wait) {
    std::vector<std::string> args{"GET", key};
    auto [ec, reply] = co_await redis_.command(std::move(args));
    if (ec || reply.is_error()) co_return false;
    if (reply.is_nil() || reply.str == kDone) co_return true;
    timer.expires_after(interval);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    waited += interval;
    interval = std::min(interval * 2, std::chrono::milliseconds(200));
  }
  co_return false;
}

}  // namespace wg::serving
