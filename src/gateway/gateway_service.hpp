#pragma once
// The answer to one validated API request: from the cache when it holds a fresh copy,
// otherwise from one coalesced upstream fetch (counted against the monthly quota), stored for
// the next callers. Failures upstream are never cached.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "coalescer.hpp"
#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::cache {
class RedisStore;
}
namespace wg::upstream {
class Client;
}
namespace wg::quota {
class QuotaCounter;
}

namespace wg::gateway {

// How an answer was produced; drives Cache-Status and metrics.
enum class CacheResult {
  hit,        // fresh copy from the cache
  miss,       // fetched upstream by this request
  collapsed,  // fetched upstream by a concurrent request this one waited for
};

struct Served {
  std::shared_ptr<const cache::Entry> entry;  // null when `error` is set
  CacheResult result = CacheResult::miss;
  bool stored = false;  // a fetched entry reached the shared cache
  api::ErrorCode error = api::ErrorCode::upstream_error;
  std::chrono::seconds retry_after{0};  // for quota_exhausted
  WallTime now{};
  bool ok() const { return entry != nullptr; }
};

struct ServiceDependencies {
  cache::RedisStore& store;
  upstream::Client& upstream;
  quota::QuotaCounter& quota;
  Clock& clock;
  RandomSource& random;
};

class GatewayService {
 public:
  GatewayService(ServiceDependencies deps, const config::Config& config);

  boost::asio::awaitable<Served> serve(const api::ApiRequest& request);

  // Applies reloadable settings (TTL policy); safe while requests run.
  void update(const config::Config& config);

 private:
  struct Settings {
    config::CacheConfig cache;
    cache::TtlPolicy ttl;
    std::chrono::milliseconds wait_timeout;
  };

  boost::asio::awaitable<FetchOutcome> fetch(const api::ApiRequest& request, std::string key,
                                             std::shared_ptr<const Settings> settings);
  std::shared_ptr<const Settings> settings() const { return settings_.load(); }

  ServiceDependencies deps_;
  Coalescer coalescer_;
  std::atomic<std::shared_ptr<const Settings>> settings_;
};

}  // namespace wg::gateway
