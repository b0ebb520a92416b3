#include "widget_gateway/quota/eviction_policy.hpp"

#include <string>
#include <vector>

#include "widget_gateway/common/ascii.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::quota {

bool policy_evicts_quota_keys(std::string_view policy) {
  constexpr std::string_view kAllKeys = "allkeys-";
  return policy.size() > kAllKeys.size() &&
         ascii::iequals(policy.substr(0, kAllKeys.size()), kAllKeys);
}

boost::asio::awaitable<bool> warn_if_quota_evictable(redis::Client& redis) {
  std::vector<std::string> args{"CONFIG", "GET", "maxmemory-policy"};
  auto [ec, reply] = co_await redis.command(std::move(args));
  if (ec) co_return false;
  // {"maxmemory-policy", value}; an error reply (CONFIG renamed or refused) says nothing.
  if (reply.type == redis::Reply::Type::array && reply.elements.size() == 2 &&
      policy_evicts_quota_keys(reply.elements[1].str)) {
    log::warn("redis_eviction_policy",
              {{"policy", reply.elements[1].str},
               {"why",
                "the quota keys have no TTL: only noeviction or a volatile-* policy "
                "keeps them"}});
  }
  co_return true;
}

}  // namespace wg::quota
