#include "serving_core.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>

#include "widget_gateway/quota/quota_counter.hpp"

namespace wg::serving {
namespace asio = boost::asio;

redis::Settings redis_settings(const config::Config& config) {
  redis::Settings settings;
  settings.endpoint = *redis::parse_url(config.redis.url);  // validated by the config loader
  settings.command_timeout = config.redis.timeout;
  settings.connect_timeout = config.redis.timeout;
  settings.reconnect_max = config.redis.reconnect_max;
  return settings;
}

ServingCore::ServingCore(asio::any_io_executor ex, const config::Config& config,
                         const redis::Settings& redis_settings, std::size_t l1_bytes,
                         ProcessParts parts, unsigned index)
    : redis(ex, redis_settings, parts.random),
      upstream(ex, config.upstream, parts.clock),
      store(redis, parts.generations),
      // One shard: the worker is its only user, so shards would only split its budget.
      l1(l1_bytes, 1, cache::L1Cache::Access::owner_thread),
      tier(l1, store, parts.clock, parts.metrics),
      lock(redis, parts.random),
      // Shares, so the workers together never exceed the instance's limits (each gets one
      // slot at least).
      slots(std::max<std::size_t>(1, config.upstream.max_in_flight / std::max(parts.workers, 1u)),
            config.upstream.max_queued / std::max(parts.workers, 1u)),
      fetcher({upstream, redis, slots, parts.known, parts.quota, parts.breaker, parts.hold,
               parts.clock, parts.random, parts.metrics}),
      service(ex,
              {tier, fetcher, lock, parts.known, redis, parts.quota, parts.clock, parts.random,
               parts.metrics, parts.siblings, index},
              config),
      executor_(ex),
      quota_(parts.quota) {}

ServingCore::~ServingCore() {
  redis.stop();
  upstream.close_idle();
}

void ServingCore::start() {
  redis.on_state_change([this](bool up) {
    if (up) asio::co_spawn(executor_, quota_.report(redis), asio::detached);
  });
  redis.start();
}

void ServingCore::apply(const config::Config& config, std::size_t l1_bytes) {
  l1.set_max_bytes(l1_bytes);
  service.update(config);
}

}  // namespace wg::serving
