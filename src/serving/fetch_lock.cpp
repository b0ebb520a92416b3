#include "fetch_lock.hpp"

#include <algorithm>
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

// KEYS[1] lock, KEYS[2] guard counter (optional); ARGV[1] the holder's token ("": none). Deletes
// the lock if it is still that token's, and gives one guard count back.
constexpr std::string_view kReleaseScript = R"lua(
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if KEYS[2] and tonumber(redis.call('HGET', KEYS[2], 'n') or '0') > 0 then
  redis.call('HINCRBY', KEYS[2], 'n', -1)
end
return 1
)lua";

// KEYS[1] lock; ARGV[1] token; ARGV[2] ttl (ms). 1 when the lock was still ours and now lives
// ttl longer.
constexpr std::string_view kExtendScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
)lua";

// KEYS[1] lock, KEYS[2] entry, KEYS[3] guard counter (optional). ARGV[1] token, ARGV[2] lock
// ttl (ms), ARGV[3] and ARGV[4] the caller's copy's stored_at and fresh_until (ms, 0: none),
// ARGV[5] now (ms), ARGV[6] the oldest stored_at that counts (ms), ARGV[7] the guard period's
// end (ms). The entry's header is the fixed head of cache::encode_entry: "WGE1", status (2
// bytes), then stored_at and fresh_until as little-endian 64-bit milliseconds at bytes 7 and 15
// (Lua counts from 1; doubles hold them exactly).
// Returns {state, counted before, stored_at, fresh_until}: state "newer" (Redis's copy is
// newer than the caller's and fresh: nothing taken), "" (the lock is ours, one count reserved),
// or the value of someone else's lock.
constexpr std::string_view kClaimScript = R"lua(
local function at(s, i)
  local v = 0
  for k = i + 7, i, -1 do v = v * 256 + string.byte(s, k) end
  return v
end
local head = redis.call('GETRANGE', KEYS[2], 0, 29)
if string.len(head) == 30 and string.sub(head, 1, 4) == 'WGE1' then
  local stored, fresh = at(head, 7), at(head, 15)
  local known_stored, known_fresh = tonumber(ARGV[3]), tonumber(ARGV[4])
  if fresh > tonumber(ARGV[5]) and stored >= tonumber(ARGV[6]) and
     (stored > known_stored or (stored == known_stored and fresh > known_fresh)) then
    return {'newer', 0, stored, fresh}
  end
end
local n = 0
if KEYS[3] then n = tonumber(redis.call('HGET', KEYS[3], 'n') or '0') end
local old = redis.call('GET', KEYS[1])
if old and old ~= 'done' then return {old, n, 0, 0} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if KEYS[3] then
  redis.call('HINCRBY', KEYS[3], 'n', 1)
  redis.call('PEXPIREAT', KEYS[3], ARGV[7])
end
return {'', n, 0, 0}
)lua";

// KEYS[1] guard counter; ARGV[1] the period's end (ms). The count before this one.
constexpr std::string_view kReserveScript = R"lua(
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
return n - 1
)lua";

// KEYS[1] lock; ARGV[1] how long "done" stays (ms), ARGV[2] channel ("": none), ARGV[3] message.

// KEYS[1] pace token, KEYS[2] guard counter; ARGV[1] interval (ms), ARGV[2] the period's end
// (ms). {taken, first pacing of the period, ms until the token frees}.
constexpr std::string_view kPaceScript = R"lua(
local first = redis.call('HSETNX', KEYS[2], 'paced', 1)
if first == 1 then redis.call('PEXPIREAT', KEYS[2], ARGV[2]) end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return {1, first, 0} end
return {0, first, redis.call('PTTL', KEYS[1])}
)lua";

std::string millis(WallTime t) {
  return std::to_string(unix_millis(t));
}

// A copy's times as the script read them from its header: one Redis cannot hold is as old as
// can be.
WallTime from_millis(long long ms) {
  return wall_from_unix_millis(ms).value_or(WallTime{});
}

std::string random_token(RandomSource& random) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(16, '0');
  for (char& c : token) c = kHex[static_cast<int>(random.uniform01() * 16) & 15];
  return token;
}

}  // namespace

asio::awaitable<FetchLock::Claim> FetchLock::claim(const std::string& lock_key,
                                                   const std::string& entry_key,
                                                   std::chrono::milliseconds ttl, Known known,
                                                   WallTime now, WallTime oldest,
                                                   const Guard* guard) {
  Claim claimed;
  if (!redis_.connected()) co_return claimed;
  claimed.token = random_token(random_);
  std::vector<std::string> args{"EVAL", std::string(kClaimScript), guard ? "3" : "2",
                                keys_.unversioned(lock_key), entry_key};
  if (guard != nullptr) args.push_back(guard->counter);
  args.push_back(claimed.token);
  args.push_back(std::to_string(ttl.count()));
  args.push_back(millis(known.stored_at));
  args.push_back(millis(known.fresh_until));
  args.push_back(millis(now));
  args.push_back(millis(oldest));
  args.push_back(std::to_string(guard ? guard->expires_ms : 0));
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 4 ||
      reply.elements[0].type != redis::Reply::Type::string) {
    co_return Claim{};
  }
  const std::string& state = reply.elements[0].str;
  if (reply.elements[1].integer > 0) {
    claimed.spent = static_cast<std::uint64_t>(reply.elements[1].integer);
  }
  if (state == "newer") {
    claimed.state = Claim::State::newer;
    claimed.redis =
        Known{from_millis(reply.elements[2].integer), from_millis(reply.elements[3].integer)};
  } else if (state.empty()) {
    claimed.state = Claim::State::acquired;
  } else {
    claimed.state = Claim::State::busy;
  }
  if (claimed.state != Claim::State::acquired) claimed.token.clear();
  co_return claimed;
}

asio::awaitable<std::optional<std::uint64_t>> FetchLock::reserve(const Guard& guard) {
  std::vector<std::string> args{"EVAL", std::string(kReserveScript), "1", guard.counter,
                                std::to_string(guard.expires_ms)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec || reply.type != redis::Reply::Type::integer) co_return std::nullopt;
  co_return static_cast<std::uint64_t>(std::max<long long>(0, reply.integer));
}

cache::LockDone FetchLock::done_for(const std::string& lock_key, const std::string& channel,
                                    const std::string& message) const {
  return {keys_.unversioned(lock_key), kDoneFor, channel, message};
}

asio::awaitable<void> FetchLock::mark_done(const std::string& lock_key, const std::string& channel,
                                           const std::string& message) {
  // KEYS[1] the lock; ARGV[1..3] lock_done_lua's.
  static const std::string script = cache::lock_done_lua(1, 1) + "return 1";
  cache::LockDone done = done_for(lock_key, channel, message);
  std::vector<std::string> args{"EVAL",
                                script,
                                "1",
                                std::move(done.lock_key),
                                std::to_string(done.for_ms.count()),
                                std::move(done.channel),
                                std::move(done.message)};
  co_await redis_.command(std::move(args));
}

asio::awaitable<void> FetchLock::announce(const std::string& channel, const std::string& message) {
  if (channel.empty()) co_return;
  std::vector<std::string> args{"PUBLISH", channel, message};
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

asio::awaitable<void> FetchLock::release(const std::string& lock_key, const std::string& token,
                                         const Guard* give_back) {
  if (token.empty() && give_back == nullptr) co_return;
  std::vector<std::string> args{"EVAL", std::string(kReleaseScript), give_back ? "2" : "1",
                                keys_.unversioned(lock_key)};
  if (give_back != nullptr) args.push_back(give_back->counter);
  args.push_back(token);
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
