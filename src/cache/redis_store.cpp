#include "widget_gateway/cache/redis_store.hpp"

#include <chrono>

#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::cache {
namespace asio = boost::asio;

asio::awaitable<Lookup> RedisStore::get(const std::string& key) {
  // Arguments are built before co_await: GCC 12 destroys temporaries in a co_await
  // expression twice.
  std::vector<std::string> args{"GET", key};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  Lookup lookup;
  if (ec) {
    lookup.ec = ec;
    co_return lookup;
  }
  if (reply.type == redis::Reply::Type::string) {
    if (auto entry = decode_entry(reply.str)) {
      lookup.entry = std::make_shared<const Entry>(std::move(*entry));
    } else {
      // Written by an incompatible version or corrupted: a miss, and the fetch overwrites it.
      log::warn("cache_entry_undecodable", {{"key", key}});
    }
  } else if (reply.type == redis::Reply::Type::error) {
    lookup.ec = make_error_code(errc::redis_error);
  }
  co_return lookup;
}

asio::awaitable<std::error_code> RedisStore::put(const std::string& key, const Entry& entry) {
  auto expire_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(entry.stale_until.time_since_epoch())
          .count();
  std::vector<std::string> args{"SET", key, encode_entry(entry), "PXAT", std::to_string(expire_ms)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (!ec && reply.type == redis::Reply::Type::error) ec = make_error_code(errc::redis_error);
  co_return ec;
}

asio::awaitable<std::error_code> RedisStore::erase(const std::string& key) {
  std::vector<std::string> args{"DEL", key};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (!ec && reply.type == redis::Reply::Type::error) ec = make_error_code(errc::redis_error);
  co_return ec;
}

}  // namespace wg::cache
