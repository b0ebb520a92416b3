#include "widget_gateway/cache/redis_store.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <charconv>
#include <chrono>
#include <tuple>
#include <vector>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::cache {
namespace asio = boost::asio;

// Arguments are built before co_await throughout: GCC 12 rejects a braced list inside a
// co_await expression (docs/ci.md lists its coroutine bugs).

namespace {

std::optional<std::uint64_t> to_number(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A generation counter's value: nil is 0.
std::optional<std::uint64_t> generation_of(const redis::Reply& reply) {
  if (reply.type == redis::Reply::Type::nil) return 0;
  if (reply.type == redis::Reply::Type::string) return to_number(reply.str);
  if (reply.type == redis::Reply::Type::integer && reply.integer >= 0)
    return static_cast<std::uint64_t>(reply.integer);
  return std::nullopt;
}

}  // namespace

asio::awaitable<std::pair<std::error_code, std::uint64_t>> RedisStore::read_generation(
    std::string key) {
  std::vector<std::string> args{"GET", std::move(key)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec) co_return std::pair{ec, std::uint64_t{0}};
  auto generation = generation_of(reply);
  if (!generation) co_return std::pair{make_error_code(errc::redis_error), std::uint64_t{0}};
  co_return std::pair{std::error_code{}, *generation};
}

asio::awaitable<RedisStore::WidgetState> RedisStore::read_widget(std::string escaped_id) {
  WidgetState state;
  std::vector<std::string> args{"MGET", keys_.widget_generation(escaped_id),
                                keys_.widget_soft(escaped_id)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (!ec && (reply.type != redis::Reply::Type::array || reply.elements.size() != 2)) {
    ec = make_error_code(errc::redis_error);
  }
  if (ec) {
    state.ec = ec;
    co_return state;
  }
  const auto generation = generation_of(reply.elements[0]);
  const auto soft = generation_of(reply.elements[1]);
  if (!generation || !soft) {
    state.ec = make_error_code(errc::redis_error);
    co_return state;
  }
  state.generation = *generation;
  state.soft_ms = *soft;
  co_return state;
}

asio::awaitable<std::pair<std::error_code, std::string>> RedisStore::physical(
    const std::string& key) {
  auto parts = split_key(key);
  // Not a widget key: prefixed, without generations.
  if (!parts) co_return std::pair{std::error_code{}, keys_.unversioned(key)};
  auto global = generations_.global();
  auto widget = generations_.widget(parts->escaped_id);
  const bool need_global = !global || !generations_.global_soft();
  const bool need_widget = !widget || !generations_.widget_soft(parts->escaped_id);
  if (need_global || need_widget) {
    // The global generation and stamp live in slots of their own, the widget's two in its
    // slot: up to three commands, pipelined on the connection, so still one round trip (the
    // first lookup of a widget, or any after start or after the purge channel dropped).
    using namespace asio::experimental::awaitable_operators;
    std::pair<std::error_code, std::uint64_t> global_read{{}, global.value_or(0)};
    std::pair<std::error_code, std::uint64_t> soft_read{{}, 0};
    WidgetState widget_read;
    std::string global_key = keys_.global_generation();
    std::string soft_key = keys_.global_soft();
    std::string escaped(parts->escaped_id);
    if (need_global && need_widget) {
      auto all = read_generation(std::move(global_key)) && read_generation(std::move(soft_key)) &&
                 read_widget(std::move(escaped));
      std::tie(global_read, soft_read, widget_read) = co_await std::move(all);
    } else if (need_global) {
      auto both = read_generation(std::move(global_key)) && read_generation(std::move(soft_key));
      std::tie(global_read, soft_read) = co_await std::move(both);
    } else {
      widget_read = co_await read_widget(std::move(escaped));
    }
    const std::error_code failed = global_read.first ? global_read.first
                                   : soft_read.first ? soft_read.first
                                                     : widget_read.ec;
    if (failed) co_return std::pair{failed, std::string()};
    if (need_global) {
      generations_.set_global(global_read.second);
      generations_.set_global_soft(
          WallTime{std::chrono::milliseconds(static_cast<std::int64_t>(soft_read.second))});
    }
    if (need_widget) {
      generations_.set_widget(parts->escaped_id, widget_read.generation);
      generations_.set_widget_soft(
          parts->escaped_id,
          WallTime{std::chrono::milliseconds(static_cast<std::int64_t>(widget_read.soft_ms))});
    }
    global = generations_.global();
    widget = generations_.widget(parts->escaped_id);
    if (!global || !widget) co_return std::pair{make_error_code(errc::redis_error), std::string()};
  }
  co_return std::pair{std::error_code{}, keys_.entry(*parts, *global, *widget)};
}

WallTime RedisStore::soft_stamp(const std::string& key) const {
  const auto parts = split_key(key);
  if (!parts) return WallTime{};
  return generations_.soft_stamp(parts->escaped_id);
}

namespace {

// One value of a GET or MGET reply as a lookup result.
void decode_into(Lookup& lookup, const redis::Reply& reply, const std::string& key) {
  if (reply.type == redis::Reply::Type::string) {
    if (auto entry = decode_entry(reply.str)) {
      codings_on_demand(*entry);
      lookup.entry = std::make_shared<const Entry>(std::move(*entry));
    } else {
      // Written by an incompatible version or corrupted: a miss, and the fetch overwrites it.
      log::warn("cache_entry_undecodable", {{"key", key}});
    }
  } else if (reply.type == redis::Reply::Type::error) {
    lookup.ec = make_error_code(errc::redis_error);
  }
}

}  // namespace

asio::awaitable<Lookup> RedisStore::get(const std::string& key) {
  Lookup lookup;
  auto [key_ec, physical_key] = co_await physical(key);
  if (key_ec) {
    lookup.ec = key_ec;
    co_return lookup;
  }
  lookup.physical_key = physical_key;
  std::vector<std::string> args{"GET", std::move(physical_key)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec) {
    lookup.ec = ec;
    co_return lookup;
  }
  decode_into(lookup, reply, key);
  co_return lookup;
}

asio::awaitable<std::pair<Lookup, Lookup>> RedisStore::get_pair(const std::string& first,
                                                                const std::string& second) {
  std::pair<Lookup, Lookup> found;
  auto [first_ec, first_physical] = co_await physical(first);
  auto [second_ec, second_physical] = co_await physical(second);  // generations known by now
  if (first_ec || second_ec) {
    found.first.ec = found.second.ec = first_ec ? first_ec : second_ec;
    co_return found;
  }
  if (hash_tag(first_physical) != hash_tag(second_physical)) {
    // Keys of two widgets: two slots, so two commands.
    found.first = co_await get(first);
    found.second = co_await get(second);
    co_return found;
  }
  found.first.physical_key = first_physical;
  found.second.physical_key = second_physical;
  std::vector<std::string> args{"MGET", std::move(first_physical), std::move(second_physical)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (!ec && (reply.type != redis::Reply::Type::array || reply.elements.size() != 2)) {
    ec = make_error_code(errc::redis_error);
  }
  if (ec) {
    found.first.ec = found.second.ec = ec;
    co_return found;
  }
  decode_into(found.first, reply.elements[0], first);
  decode_into(found.second, reply.elements[1], second);
  co_return found;
}

asio::awaitable<std::pair<std::error_code, RedisStore::Placement>> RedisStore::place(
    const std::string& key) {
  auto [ec, physical_key] = co_await physical(key);
  Placement placement;
  placement.physical_key = std::move(physical_key);
  if (const auto parts = split_key(key)) {
    placement.global = generations_.global().value_or(0);
    placement.widget = generations_.widget(parts->escaped_id).value_or(0);
  }
  co_return std::pair{ec, std::move(placement)};
}

RedisStore::Since RedisStore::since(const std::string& key, const Placement& placement) const {
  const auto parts = split_key(key);
  if (!parts) return Since::unchanged;
  const auto global = generations_.global();
  const auto widget = generations_.widget(parts->escaped_id);
  if (!global || !widget) return Since::unknown;
  return *global == placement.global && *widget == placement.widget ? Since::unchanged
                                                                    : Since::changed;
}

asio::awaitable<std::error_code> RedisStore::put(const std::string& key, const Entry& entry) {
  auto [key_ec, placement] = co_await place(key);
  if (key_ec) co_return key_ec;
  co_return co_await put(placement, entry);
}

asio::awaitable<std::error_code> RedisStore::put(const Placement& placement, const Entry& entry,
                                                 const LockDone* done) {
  std::string physical_key = placement.physical_key;
  const auto expire_ms = unix_millis(entry.stale_until);
  std::vector<std::string> args;
  if (done == nullptr) {
    args = {"SET", std::move(physical_key), encode_entry(entry), "PXAT", std::to_string(expire_ms)};
  } else {
    // KEYS[1] the entry, KEYS[2] the lock; ARGV[1] the entry, ARGV[2] its expiry (ms since the
    // epoch), ARGV[3..5] the lock's "done" (lock_done_lua).
    static const std::string script =
        "redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])\n" + lock_done_lua(2, 3) + "return 1";
    args = {"EVAL",
            script,
            "2",
            std::move(physical_key),
            done->lock_key,
            encode_entry(entry),
            std::to_string(expire_ms),
            std::to_string(done->for_ms.count()),
            done->channel,
            done->message};
  }
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (!ec && reply.type == redis::Reply::Type::error) ec = make_error_code(errc::redis_error);
  co_return ec;
}

asio::awaitable<std::error_code> RedisStore::purge_widget(std::string_view widget_id) {
  const std::string escaped = api::escape_key_id(widget_id);
  std::vector<std::string> incr{"INCR", keys_.widget_generation(escaped)};
  auto [ec, reply] = co_await redis_.command(std::move(incr));
  if (ec) co_return ec;
  if (reply.type != redis::Reply::Type::integer) co_return make_error_code(errc::redis_error);
  std::vector<std::string> publish{"PUBLISH", keys_.purge_channel(),
                                   "w " + std::to_string(reply.integer) + " " + escaped};
  auto [publish_ec, publish_reply] = co_await redis_.command(std::move(publish));
  apply_purge_message("w " + std::to_string(reply.integer) + " " + escaped);
  co_return publish_ec;
}

asio::awaitable<std::error_code> RedisStore::purge_all() {
  std::vector<std::string> incr{"INCR", keys_.global_generation()};
  auto [ec, reply] = co_await redis_.command(std::move(incr));
  if (ec) co_return ec;
  if (reply.type != redis::Reply::Type::integer) co_return make_error_code(errc::redis_error);
  std::vector<std::string> publish{"PUBLISH", keys_.purge_channel(),
                                   "a " + std::to_string(reply.integer)};
  auto [publish_ec, publish_reply] = co_await redis_.command(std::move(publish));
  apply_purge_message("a " + std::to_string(reply.integer));
  co_return publish_ec;
}

namespace {

// KEYS[1] a soft-purge stamp; ARGV[1] now (ms). Keeps the later stamp and returns it.
constexpr std::string_view kSoftPurgeScript = R"lua(
local old = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local now = tonumber(ARGV[1])
if now > old then redis.call('SET', KEYS[1], ARGV[1]) return now end
return old
)lua";

WallTime from_ms(std::uint64_t ms) {
  return WallTime{std::chrono::duration_cast<WallTime::duration>(
      std::chrono::milliseconds(static_cast<std::int64_t>(ms)))};
}

}  // namespace

asio::awaitable<std::error_code> RedisStore::soft_purge(std::string key, WallTime now,
                                                        std::string message_head,
                                                        std::string message_tail) {
  const auto now_ms = unix_millis(now);
  std::vector<std::string> args{"EVAL", std::string(kSoftPurgeScript), "1", std::move(key),
                                std::to_string(now_ms)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec) co_return ec;
  if (reply.type != redis::Reply::Type::integer || reply.integer <= 0) {
    co_return make_error_code(errc::redis_error);
  }
  const std::string message = message_head + " " + std::to_string(reply.integer) + message_tail;
  std::vector<std::string> publish{"PUBLISH", keys_.purge_channel(), message};
  auto [publish_ec, publish_reply] = co_await redis_.command(std::move(publish));
  apply_purge_message(message);
  co_return publish_ec;
}

asio::awaitable<std::error_code> RedisStore::soft_purge_widget(std::string_view widget_id,
                                                               WallTime now) {
  const std::string escaped = api::escape_key_id(widget_id);
  co_return co_await soft_purge(keys_.widget_soft(escaped), now, "s", " " + escaped);
}

asio::awaitable<std::error_code> RedisStore::soft_purge_all(WallTime now) {
  co_return co_await soft_purge(keys_.global_soft(), now, "S", "");
}

std::optional<std::string> RedisStore::apply_purge_message(std::string_view message) {
  // "w <generation> <escaped id>", "a <generation>" (purges), "s <ms> <escaped id>" and "S <ms>"
  // (soft purges). Either way the L1 copies go: a soft-purged copy is read again from Redis,
  // where it is read as stale.
  if (message.size() < 3 || message[1] != ' ') return std::nullopt;
  std::string_view rest = message.substr(2);
  if (message[0] == 'a' || message[0] == 'S') {
    auto number = to_number(rest);
    if (!number) return std::nullopt;
    if (message[0] == 'a') {
      generations_.set_global(*number);
    } else {
      generations_.set_global_soft(from_ms(*number));
    }
    return std::string();
  }
  if (message[0] != 'w' && message[0] != 's') return std::nullopt;
  auto space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto number = to_number(rest.substr(0, space));
  std::string_view escaped = rest.substr(space + 1);
  if (!number || escaped.empty()) return std::nullopt;
  if (message[0] == 'w') {
    generations_.set_widget(escaped, *number);
  } else {
    generations_.set_widget_soft(escaped, from_ms(*number));
  }
  return logical_widget_prefix(escaped);
}

namespace {

// KEYS[1] the set of holds; ARGV[1] since (ms), ARGV[2] the logical key, ARGV[3] how many to
// keep. The first hold of a key keeps its time; the oldest holds go past the bound.
constexpr std::string_view kNoteHoldScript = R"lua(
redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -1 - tonumber(ARGV[3]))
return 1
)lua";

}  // namespace

asio::awaitable<void> RedisStore::note_hold(const std::string& key, WallTime since) {
  const auto since_ms = unix_millis(since);
  std::vector<std::string> args{
      "EVAL", std::string(kNoteHoldScript), "1", keys_.unconfirmed(), std::to_string(since_ms),
      key,    std::to_string(kMaxHolds)};
  co_await redis_.command(std::move(args));
}

asio::awaitable<void> RedisStore::forget_hold(const std::string& key) {
  std::vector<std::string> args{"ZREM", keys_.unconfirmed(), key};
  co_await redis_.command(std::move(args));
}

asio::awaitable<std::pair<std::size_t, std::vector<RedisStore::PendingHold>>> RedisStore::holds(
    std::size_t most) {
  std::pair<std::size_t, std::vector<PendingHold>> found;
  std::vector<std::string> card{"ZCARD", keys_.unconfirmed()};
  auto [card_ec, count] = co_await redis_.command(std::move(card));
  if (card_ec || count.type != redis::Reply::Type::integer) co_return found;
  found.first = static_cast<std::size_t>(std::max<long long>(0, count.integer));
  std::vector<std::string> range{"ZRANGE", keys_.unconfirmed(), "0",
                                 std::to_string(most == 0 ? 0 : most - 1), "WITHSCORES"};
  auto [range_ec, members] = co_await redis_.command(std::move(range));
  if (range_ec || members.type != redis::Reply::Type::array || most == 0) co_return found;
  // Declared before the loop: GCC 12 mishandles block-scoped locals that live across a
  // co_await inside a loop (docs/ci.md).
  std::string key;
  Lookup lookup;
  for (std::size_t i = 0; i + 1 < members.elements.size(); i += 2) {
    key = members.elements[i].str;
    // Still held? A purge, an eviction or a store since may have ended it.
    lookup = co_await get(key);
    if (lookup.ec) continue;
    if (!lookup.entry || !lookup.entry->hold) {
      co_await forget_hold(key);
      if (found.first > 0) --found.first;
      continue;
    }
    found.second.push_back({key, lookup.entry->hold->since, lookup.entry->fresh_until});
  }
  co_return found;
}

}  // namespace wg::cache
