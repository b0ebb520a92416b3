#include "serving_core.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>
#include <cstdlib>

#include "widget_gateway/common/log.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/settings_from.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

redis::Settings owned_by(redis::Settings settings, std::string owner) {
  settings.owner = std::move(owner);
  settings.one_io_thread = true;  // a worker's context, run by its one thread
  return settings;
}

// This worker's tracer: its share of the span queue, seeded once from the injected source.
tracing::Tracer make_tracer(const config::TracingConfig& config, const ProcessParts& parts) {
  tracing::TracerSettings settings;
  settings.exporting = !config.otlp_endpoint.empty();
  settings.sample = config.sample;
  settings.max_queued_spans =
      std::max<std::size_t>(1, config.max_queued_spans / std::max(parts.workers, 1u));
  const auto draw = [&] { return static_cast<std::uint64_t>(parts.random.uniform01() * 0x1p32); };
  const std::uint64_t seed = draw() << 32 ^ draw();
  return tracing::Tracer(settings, parts.clock, seed);
}

}  // namespace

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
    : tracer(make_tracer(config.tracing, parts)),
      redis(ex, owned_by(redis_settings, "worker " + std::to_string(index)), parts.random),
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
               parts.clock, parts.random, parts.metrics, &cost}),
      service(ex,
              {tier, fetcher, lock, parts.known, redis, parts.quota, parts.clock, parts.random,
               parts.metrics, parts.siblings, index, parts.list_ends, &tracer},
              config),
      executor_(ex),
      quota_(parts.quota),
      metrics_(parts.metrics),
      index_(index) {}

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
      drop_l1();
    }
  });
  redis.start();
}

void ServingCore::clear_l1_when_redis_up() {
  if (redis.connected()) {
    drop_l1();
  } else {
    clear_l1_when_up_ = true;
  }
}

void ServingCore::drop_l1() {
  // Purges may have been missed while Redis was away: every copy here is suspect. Said, because
  // the misses that follow cost upstream calls; an empty L1 (the first connection) costs none.
  if (l1.entries() == 0) return;
  log::info("l1_dropped", {{"worker", index_},
                           {"entries", static_cast<unsigned long long>(l1.entries())},
                           {"bytes", static_cast<unsigned long long>(l1.bytes())},
                           {"reason", "purges may have been missed while Redis was away"}});
  l1.clear();
}

void ServingCore::apply(const config::Config& config, std::size_t l1_bytes) {
  l1.set_max_bytes(l1_bytes);
  service.update(config);
}

}  // namespace wg::serving
