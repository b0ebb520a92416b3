#pragma once
// The quota keys carry no TTL, so Redis evicts them only under an allkeys-* maxmemory-policy.
// At start the gateway asks Redis which policy it runs and warns when it is one of those:
// best effort, since a managed Redis may rename or refuse CONFIG (then nothing is said).

#include <boost/asio/awaitable.hpp>
#include <string_view>

namespace wg::redis {
class Client;
}

namespace wg::quota {

// Whether `policy` (a maxmemory-policy value) may evict keys without a TTL: allkeys-lru,
// allkeys-lfu, allkeys-random. noeviction and every volatile-* policy never do.
bool policy_evicts_quota_keys(std::string_view policy);

// Asks CONFIG GET maxmemory-policy and logs a warning (redis_eviction_policy) when the answer
// may evict the quota keys. True once Redis has answered anything, an error included; false
// when it could not be asked (not connected, timed out): the caller asks again later.
boost::asio::awaitable<bool> warn_if_quota_evictable(redis::Client& redis);

}  // namespace wg::quota
