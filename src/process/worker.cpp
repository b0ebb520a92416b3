#include "process/worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "widget_gateway/metrics/instruments.hpp"

namespace wg::process {
namespace asio = boost::asio;

namespace {

// The connection cap and the output budget are the process's: each worker takes its share
// (the kernel spreads connections evenly over SO_REUSEPORT sockets).
config::ServerConfig worker_limits(config::ServerConfig limits, unsigned workers) {
  limits.max_connections = (limits.max_connections + workers - 1) / workers;
  limits.max_pending_output_bytes /= std::max(1u, workers);
  return limits;
}

}  // namespace

std::size_t l1_share(std::size_t l1_max_bytes, unsigned workers) {
  return l1_max_bytes / std::max(1u, workers);
}

Worker::Worker(unsigned index, unsigned workers, const config::Config& config,
               const redis::Settings& redis_settings, ProcessParts parts,
               const Readiness& readiness, frontend::ClientLimiters limiters,
               accesslog::AccessLog* access_log)
    : index_(index),
      workers_(workers),
      core_(ioc_.get_executor(), config, redis_settings,
            l1_share(config.cache.l1_max_bytes, workers), parts, index),
      handler_(core_.service, readiness, parts.clock, config, std::move(limiters), parts.metrics,
               access_log, &core_.tracer),
      server_(ioc_, "public", worker_limits(config.server, workers), handler_, parts.clock) {}

Worker::~Worker() {
  if (thread_.joinable()) thread_.join();
}

asio::ip::tcp::endpoint Worker::bind(const asio::ip::tcp::endpoint& endpoint) {
  return server_.bind(endpoint, true);
}

void Worker::start() {
  core_.start();
  server_.start();
  thread_ = std::thread([this] {
    metrics::claim_shard(index_);
    ioc_.run();
  });
}

void Worker::stop(std::chrono::steady_clock::duration timeout, std::function<void()> done) {
  auto drain = [this, timeout, done = std::move(done)]() -> asio::awaitable<void> {
    co_await server_.drain(timeout);
    core_.redis.stop();
    core_.upstream.close_idle();
    done();
    ioc_.stop();
  };
  asio::co_spawn(ioc_, drain, asio::detached);
}

void Worker::apply(const config::Config& config, frontend::ClientLimiters limiters) {
  asio::post(ioc_, [this, config, limiters = std::move(limiters)]() mutable {
    core_.apply(config, l1_share(config.cache.l1_max_bytes, workers_));
    handler_.update(config, std::move(limiters));
  });
}

void Worker::use_redis_primary(std::string host, std::uint16_t port) {
  asio::post(ioc_, [this, host = std::move(host), port]() mutable {
    core_.redis.use_primary(std::move(host), port);
  });
}

}  // namespace wg::process
