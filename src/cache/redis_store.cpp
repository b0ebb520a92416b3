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

asio::awaitable<std::pair<std::error_code, std::string>> RedisStore::physical(
    const std::string& key) {
  auto parts = split_key(key);
  // Not a widget key: prefixed, without generations.
  if (!parts) co_return std::pair{std::error_code{}, keys_.unversioned(key)};
  auto global = generations_.global();
  auto widget = generations_.widget(parts->escaped_id);
  if (!global || !widget) {
    std::pair<std::error_code, std::uint64_t> global_read{{}, global.value_or(0)};
    std::pair<std::error_code, std::uint64_t> widget_read{{}, widget.value_or(0)};
    std::string global_key = keys_.global_generation();
    std::string widget_key = keys_.widget_generation(parts->escaped_id);
    if (!global && !widget) {
      // Two slots, so two commands; pipelined on the connection, they still cost one round
      // trip (the first lookup after start, or after the purge channel dropped).
      using namespace asio::experimental::awaitable_operators;
      auto both = read_generation(std::move(global_key)) && read_generation(std::move(widget_key));
      std::tie(global_read, widget_read) = co_await std::move(both);
    } else if (!global) {
      global_read = co_await read_generation(std::move(global_key));
    } else {
      widget_read = co_await read_generation(std::move(widget_key));
    }
    if (global_read.first || widget_read.first) {
      co_return std::pair{global_read.first ? global_read.first : widget_read.first, std::string()};
    }
    global = global_read.second;
    widget = widget_read.second;
    generations_.set_global(*global);
    generations_.set_widget(parts->escaped_id, *widget);
  }
  co_return std::pair{std::error_code{}, keys_.entry(*parts, *global, *widget)};
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

asio::awaitable<std::error_code> RedisStore::put(const Placement& placement, const Entry& entry) {
  std::string physical_key = placement.physical_key;
  auto expire_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(entry.stale_until.time_since_epoch())
          .count();
  std::vector<std::string> args{"SET", std::move(physical_key), encode_entry(entry), "PXAT",
                                std::to_string(expire_ms)};
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

std::optional<std::string> RedisStore::apply_purge_message(std::string_view message) {
  // "w <generation> <escaped id>" or "a <generation>"
  if (message.size() < 3 || message[1] != ' ') return std::nullopt;
  std::string_view rest = message.substr(2);
  if (message[0] == 'a') {
    auto generation = to_number(rest);
    if (!generation) return std::nullopt;
    generations_.set_global(*generation);
    return std::string();
  }
  if (message[0] != 'w') return std::nullopt;
  auto space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto generation = to_number(rest.substr(0, space));
  std::string_view escaped = rest.substr(space + 1);
  if (!generation || escaped.empty()) return std::nullopt;
  generations_.set_widget(escaped, *generation);
  return logical_widget_prefix(escaped);
}

}  // namespace wg::cache
