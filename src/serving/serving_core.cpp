#include "serving_core.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>
#include <cstdlib>

#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/settings_from.hpp"

namespace wg::serving {
namespace asio = boost::asio;

redis::Settings redis_settings(const config::Config& config) {
  // Read at start only (the workers' connections, the control connection and the subscriber):
  // the password from WG_REDIS_PASSWORD, redis.password_file or the URL.
  const char* env = std::getenv(redis::kPasswordEnv);
  return redis::settings_from(config.redis,
                              env ? std::optional<std::string_view>(env) : std::nullopt);
}

ServingCore::ServingCore(asio::any_io_executor ex, const config::Config& config,
                         const redis::Settings& redis_settings, std::size_t l1_bytes,
                         ProcessParts parts, unsigned index)
    : redis(ex, redis_settings, parts.random),
      upstream(ex, config.upstream, parts.clock),
      store(redis, parts.generations, cache::KeySpace(config.redis.key_prefix)),
      // One shard: the worker is its only user, so shards would only split its budget.
      l1(l1_bytes, 1, cache::L1Cache::Access::owner_thread),
      tier(l1, store, parts.clock, parts.metrics),
      lock(redis, parts.random, cache::KeySpace(config.redis.key_prefix)),
      // Shares, so the workers together never exceed the instance's limits (each gets one
      // slot at least).
      slots(std::max<std::size_t>(1, config.upstream.max_in_flight / std::max(parts.workers, 1u)),
            config.upstream.max_queued / std::max(parts.workers, 1u)),
      fetcher({upstream, redis, slots, parts.known, parts.quota, parts.breaker, parts.hold,
               parts.clock, parts.random, parts.metrics}),
      service(ex,
              {tier, fetcher, lock, parts.known, redis, parts.quota, parts.clock, parts.random,
               parts.metrics, parts.siblings, index, parts.list_ends},
              config),
      executor_(ex),
      quota_(parts.quota),
      metrics_(parts.metrics) {}

ServingCore::~ServingCore() {
  redis.stop();
  upstream.close_idle();
}

void ServingCore::start() {
  if (metrics_ != nullptr) {
    redis.on_error([metrics = metrics_](redis::ErrorKind kind) {
      metrics->redis_error(redis::to_string(kind));
    });
  }
  // The listener runs on the connection's strand, on this worker's (only) thread.
  redis.on_state_change([this](bool up) {
    if (!up) return;
    asio::co_spawn(executor_, quota_.report(redis), asio::detached);
    if (clear_l1_when_up_) {
      clear_l1_when_up_ = false;
      l1.clear();
    }
  });
  redis.start();
}

void ServingCore::clear_l1_when_redis_up() {
  if (redis.connected()) {
    l1.clear();
  } else {
    clear_l1_when_up_ = true;
  }
}

void ServingCore::apply(const config::Config& config, std::size_t l1_bytes) {
  l1.set_max_bytes(l1_bytes);
  service.update(config);
}

}  // namespace wg::serving
