#pragma once
// One io worker's serving objects, wired once here for the binary and the tests alike: its
// own Redis connection, upstream pool, L1, cache tier, fetch lock, fetcher and service. Every
// one of them is used by the worker's thread only, so a fresh L1 hit takes no lock and writes
// no memory another thread reads or writes (see docs/threading.md).
//
// What the workers of a process share comes in as ProcessParts: the quota view, the circuit
// breaker, the purge generations and the metric set. Each is thread-safe and none is touched by
// a fresh L1 hit.

#include <boost/asio/any_io_executor.hpp>

#include "cache_tier.hpp"
#include "fetch_lock.hpp"
#include "gateway_service.hpp"
#include "upstream_fetcher.hpp"
#include "widget_gateway/cache/generations.hpp"
#include "widget_gateway/cache/l1_cache.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/tracing/tracer.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace wg::serving {

struct ProcessParts {
  Clock& clock;
  RandomSource& random;
  cache::Generations& generations;
  quota::QuotaCounter& quota;
  upstream::CircuitBreaker& breaker;
  UpstreamHold& hold;
  KnownWidgets& known;
  metrics::GatewayMetrics* metrics = nullptr;
  SiblingCaches* siblings = nullptr;  // the other workers' L1s (null: a lone worker)
  unsigned workers = 1;               // how many share the process's upstream.max_in_flight
  ListEnds* list_ends = nullptr;      // what windows showed of review lists (null: nothing kept)
};

// Redis client settings from the configuration (the URL was validated by the config loader).
redis::Settings redis_settings(const config::Config& config);

class ServingCore {
 public:
  // `ex` must be run by one thread at a time: the worker's. `l1_bytes` is this worker's share
  // of cache.l1_max_bytes.
  // `index`: this worker's number among the process's workers.
  ServingCore(boost::asio::any_io_executor ex, const config::Config& config,
              const redis::Settings& redis_settings, std::size_t l1_bytes, ProcessParts parts,
              unsigned index = 0);
  // Stops the Redis connection and closes idle upstream connections.
  ~ServingCore();
  ServingCore(const ServingCore&) = delete;
  ServingCore& operator=(const ServingCore&) = delete;

  // Connects to Redis in the background; the quota's spending is reported whenever this
  // connection comes (back) up.
  void start();

  // Worker thread only, as everything below.
  void apply(const config::Config& config, std::size_t l1_bytes);
  // Clears L1 now if this worker's Redis connection is up, else as soon as it comes up.
  void clear_l1_when_redis_up();
  // A copy of `key` stored at `stored_at` and fresh until `fresh_until` was announced (the
  // stored channel, docs/freshness.md): drops this worker's copy if it is older, and with a
  // window the pages cut from an older one, so the next request reads the new copy.
  void drop_older(const std::string& key, WallTime stored_at, WallTime fresh_until);

  // First: the spans of coroutines still held by the io_context may name it as they go.
  tracing::Tracer tracer;
  redis::Client redis;
  upstream::Client upstream;
  cache::RedisStore store;
  cache::L1Cache l1;
  CacheTier tier;
  FetchLock lock;
  InFlightLimit slots;  // this worker's share of upstream.max_in_flight and max_queued
  UpstreamCost cost;    // the widgets this worker sent upstream most (GET /admin/top-widgets)
  UpstreamFetcher fetcher;
  GatewayService service;

 private:
  boost::asio::any_io_executor executor_;
  quota::QuotaCounter& quota_;
  metrics::GatewayMetrics* metrics_;
  unsigned index_;
  bool clear_l1_when_up_ = false;

  void drop_l1();  // logged: l1_dropped
};

}  // namespace wg::serving
