#include "serving_core.hpp"

#include <charconv>

#include "widget_gateway/cache/page_window.hpp"

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
      store(redis, parts.generations, KeySpace(config.redis.key_prefix)),
      // One shard: the worker is its only user, so shards would only split its budget.
      l1(l1_bytes, 1, cache::L1Cache::Access::owner_thread),
      tier(l1, store, parts.clock, parts.metrics, config.redis.timeout),
      lock(redis, parts.random, KeySpace(config.redis.key_prefix)),
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
    redis.on_error([metrics = metrics_](redis::ErrorKind kind) { metrics->redis_error(kind); });
    redis.on_round_trip([metrics = metrics_](auto queued, auto answered) {
      metrics->redis_round_trip(queued, answered);
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

void ServingCore::drop_older(const std::string& key, WallTime stored_at, WallTime fresh_until) {
  const auto mine = l1.get(key);
  if (!mine || !cache::newer_than(stored_at, fresh_until, *mine)) return;
  l1.erase(key);
  // Pages cut from a window carry its times: those cut from an older copy go with it.
  const auto parts = split_key(key);
  const auto list_end = key.rfind(":300:");
  if (!parts || !parts->rest.starts_with("r:") || list_end == std::string::npos) return;
  const std::string_view list(key.data(), list_end + 1);  // "wg:{id}:r:TYPE|*:"
  l1.erase_prefix_if(list, [&](std::string_view page, const cache::Entry& entry) {
    // "LIMIT:SKIP" after the list: the other windows of the list have announcements of their own.
    const std::string_view shape = page.substr(list.size());
    const auto colon = shape.find(':');
    std::uint64_t skip = 0;
    const std::string_view skip_text = shape.substr(colon + 1);
    std::from_chars(skip_text.data(), skip_text.data() + skip_text.size(), skip);
    const bool window = shape.substr(0, colon) == "300" && skip % cache::kWindowSize == 0;
    return !window && entry.stored_at < stored_at;
  });
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
