#include "known_widgets.hpp"

#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::serving {
namespace asio = boost::asio;

bool KnownWidgets::known_locally(const std::string& id) const {
  std::lock_guard lock(mutex_);
  return local_.contains(id);
}

void KnownWidgets::insert_locally_locked(const std::string& id) {
  // Full: start over rather than track recency; Redis still knows every flushed id.
  if (local_.size() >= max_local_) local_.clear();
  local_.insert(id);
}

asio::awaitable<bool> KnownWidgets::known(redis::Client& redis, std::string id) {
  if (known_locally(id)) co_return true;
  std::vector<std::string> args{"SISMEMBER", key_, id};
  auto [ec, reply] = co_await redis.command(std::move(args));
  const bool found = !ec && reply.type == redis::Reply::Type::integer && reply.integer == 1;
  if (found) {
    std::lock_guard lock(mutex_);
    insert_locally_locked(id);
  }
  co_return found;
}

void KnownWidgets::remember(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (local_.contains(id)) return;
  // Not known here until it can be flushed: with the list full, the next 200 tries again.
  if (unflushed_.size() >= max_local_) return;
  insert_locally_locked(id);
  unflushed_.push_back(id);
}

asio::awaitable<void> KnownWidgets::flush(redis::Client& redis) {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mutex_);
    ids.swap(unflushed_);
  }
  if (ids.empty()) co_return;
  std::vector<std::string> args{"SADD", key_};
  args.insert(args.end(), ids.begin(), ids.end());
  auto [ec, reply] = co_await redis.command(std::move(args));
  if (!ec && reply.type == redis::Reply::Type::integer) co_return;
  std::lock_guard lock(mutex_);
  for (auto& id : ids) {
    if (unflushed_.size() < max_local_) unflushed_.push_back(std::move(id));
  }
}

}  // namespace wg::serving
