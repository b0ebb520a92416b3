#pragma once
// GatewayService in process, wired as app.cpp wires it, with everything real except time and
// randomness: a private redis-server, the stub upstream on 127.0.0.1:0, the real Redis and
// upstream clients. Time is a ManualClock the tests move across freshness windows and month
// boundaries; the random source is fixed (no TTL jitter, no early refresh).
//
// Threads: the service runs on an io_context run by one thread, as in a gateway worker; the
// stub on its own io_context and thread. Every wait is bounded.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "frontend/response_builder.hpp"
#include "serving/cache_tier.hpp"
#include "serving/fetch_lock.hpp"
#include "serving/gateway_service.hpp"
#include "serving/serving_core.hpp"
#include "serving/upstream_fetcher.hpp"
#include "support/process.hpp"
#include "upstream-stub/stub_server.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/cache/generations.hpp"
#include "widget_gateway/cache/l1_cache.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/upstream/circuit_breaker.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace wg::serving::test {

using namespace std::chrono_literals;
// How the public listener words an answer's outcome (Cache-Status), for assertions.
using frontend::cache_status;

// A wall time given as a local date and time in `offset` (e.g. +03:00 is 180min).
WallTime local_time(int year, unsigned month, unsigned day, int hour = 0, int minute = 0,
                    int second = 0, std::chrono::minutes offset = std::chrono::minutes(0));

// Where the clock starts: a Wednesday in the future (Redis expires keys by real time, so
// entries stored "now" must not lie in Redis' past), 12:00 UTC, far from the daily refresh.
WallTime default_start();

// Calls of every Redis command but INFO, as the server counts them (INFO commandstats): how
// tests show that a path makes no Redis round trip.
std::uint64_t redis_commands(wg::test::RedisServer& redis);
// Calls of the named commands alone (lower case, e.g. {"get", "mget"}).
std::uint64_t redis_calls(wg::test::RedisServer& redis, const std::vector<std::string>& commands);

// The settings the tests reason with: fresh for exactly 1h (no jitter; the daily refresh is
// 13h+ away), stale-while-revalidate 10min, stale-if-error 24h, negative entries 5min, the
// circuit opening after 5 failures for 30s.
config::Config test_config();

// One gateway instance with one io worker: the process-wide parts and a ServingCore, built by
// the same wiring code as the binary's workers.
struct Instance {
  Instance(boost::asio::io_context& ioc, const config::Config& config, Clock& clock,
           RandomSource& random);
  ~Instance();

  cache::Generations generations;
  quota::QuotaCounter quota;
  upstream::CircuitBreaker breaker;
  UpstreamHold hold;
  KnownWidgets known;
  ListEnds list_ends{generations};
  ServingCore core;
  // The core's parts, by name.
  redis::Client& redis;
  upstream::Client& upstream;
  cache::RedisStore& store;
  cache::L1Cache& l1;
  CacheTier& tier;
  FetchLock& lock;
  UpstreamFetcher& fetcher;
  GatewayService& service;
};

class ServiceFixture {
 public:
  // `tweak` adjusts test_config() before anything is built.
  explicit ServiceFixture(std::function<void(config::Config&)> tweak = {}, int stub_widgets = 50,
                          WallTime start = default_start());
  ~ServiceFixture();

  // Adds another instance sharing the Redis and the stub (e.g. for cross-instance coalescing);
  // with a clock of its own (one that disagrees with the fleet's: docs/clocks.md).
  Instance& add_instance();
  Instance& add_instance(Clock& instance_clock);
  Instance& main() { return *instances_.front(); }
  GatewayService& service() { return main().service; }

  // serve() on the io threads, waited for (bounded).
  Served serve(const api::ApiRequest& request, Instance* instance = nullptr);
  // Starts serve() on the io threads without waiting.
  std::future<Served> start_serve(const api::ApiRequest& request, Instance* instance = nullptr);
  // Waits for a started serve() (bounded).
  static Served wait(std::future<Served>& future);
  // `count` concurrent serve() calls of one request; all waited for.
  std::vector<Served> serve_concurrently(const api::ApiRequest& request, int count,
                                         Instance* instance = nullptr);
  // Runs any coroutine of the graph to completion on the io threads (bounded).
  template <class T>
  T run(std::function<boost::asio::awaitable<T>()> make);

  // The io threads' executor (what a control-thread part under test runs on here).
  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }

  // Polls until `done` holds (bounded); returns done().
  static bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 15s);
  // Waits until no background refresh of the main instance is in flight.
  bool refreshes_done();

  // Requests for the stub's widget `index` (or any id).
  api::ApiRequest widget(std::size_t index) const;
  api::ApiRequest widget_id(const std::string& id) const;
  api::ApiRequest reviews(std::size_t index, std::uint32_t limit, std::uint64_t skip = 0,
                          std::optional<api::Platform> type = std::nullopt) const;

  // Upstream requests the stub has seen.
  std::uint64_t upstream_calls() { return stub_->handler().stats().total; }
  std::uint64_t upstream_reviews_calls() { return stub_->handler().stats().reviews; }
  stub::FaultPlan& faults() { return stub_->handler().faults(); }
  stub::StubServer& stub() { return *stub_; }
  void stop_stub() { stub_->stop(); }

  ManualClock clock;
  FixedRandom random{1.0};  // 1.0: no jitter on top of the TTL, never an early refresh
  config::Config config;
  wg::test::RedisServer redis_server;

 private:
  void teardown();

  boost::asio::io_context stub_ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> stub_work_;
  std::unique_ptr<stub::StubServer> stub_;
  std::thread stub_thread_;

  boost::asio::io_context ioc_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<Instance>> instances_;
};

// The platform the stub's data set has at `stub_index` of its platform list.
std::optional<api::Platform> platform_of(std::size_t stub_index);

}  // namespace wg::serving::test

// Printers, so that BOOST_TEST can show these values when a comparison fails.
#include <ostream>

namespace wg::cache {
inline std::ostream& operator<<(std::ostream& os, StaleReason reason) {
  return os << "StaleReason(" << (reason == StaleReason::none ? "none" : to_string(reason)) << ")";
}
}  // namespace wg::cache

namespace wg::serving {
inline std::ostream& operator<<(std::ostream& os, Outcome::Source source) {
  switch (source) {
    case Outcome::Source::cache:
      return os << "cache";
    case Outcome::Source::upstream:
      return os << "upstream";
    case Outcome::Source::collapsed:
      return os << "collapsed";
  }
  return os;
}
}  // namespace wg::serving
namespace wg::api {
inline std::ostream& operator<<(std::ostream& os, ErrorCode code) {
  return os << error_info(code, Endpoint::widget).code;
}
}  // namespace wg::api
namespace wg::quota {
inline std::ostream& operator<<(std::ostream& os, Mode mode) {
  return os << to_string(mode);
}
}  // namespace wg::quota

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

namespace wg::serving::test {

template <class T>
T ServiceFixture::run(std::function<boost::asio::awaitable<T>()> make) {
  auto future = boost::asio::co_spawn(ioc_, make(), boost::asio::use_future);
  BOOST_REQUIRE_MESSAGE(future.wait_for(30s) == std::future_status::ready,
                        "coroutine did not finish within 30s");
  return future.get();
}

}  // namespace wg::serving::test
