#include "known_widgets.hpp"

#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::serving {
namespace asio = boost::asio;

bool KnownWidgets::known_locally(const std::string& id) const {
  std::lock_guard lock(mutex_);
  return local_.contains(id);
}

void KnownWidgets::insert_locally(const std::string& id) {
  std::lock_guard lock(mutex_);
  // Full: start over rather than track recency; Redis still knows every id.
  if (local_.size() >= max_local_) local_.clear();
  local_.insert(id);
}

asio::awaitable<bool> KnownWidgets::known(redis::Client& redis, std::string id) {
  if (known_locally(id)) co_return true;
  std::vector<std::string> args{"SISMEMBER", std::string(kKnownWidgetsKey), id};
  auto [ec, reply] = co_await redis.command(std::move(args));
  const bool found = !ec && reply.type == redis::Reply::Type::integer && reply.integer == 1;
  if (found) insert_locally(id);
  co_return found;
}

asio::awaitable<void> KnownWidgets::remember(redis::Client& redis, std::string id) {
  if (known_locally(id)) co_return;
  std::vector<std::string> args{"SADD", std::string(kKnownWidgetsKey), id};
  auto [ec, reply] = co_await redis.command(std::move(args));
  if (!ec && reply.type == redis::Reply::Type::integer) insert_locally(id);
}

}  // namespace wg::serving
