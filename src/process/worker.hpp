#pragma once
// One io worker: a thread running its own io_context, with its own listening socket on the
// public port (SO_REUSEPORT: the kernel spreads connections over the workers), its own
// connections, Redis connection, upstream pool, L1 and service (ServingCore), and its own
// metric shard. Nothing a request touches on its way through a fresh L1 hit is written by any
// other thread. Other threads reach a worker only by posting to its executor (see
// docs/threading.md).

#include <boost/asio/io_context.hpp>
#include <memory>
#include <thread>

#include "frontend/public_handler.hpp"
#include "frontend/readiness.hpp"
#include "serving/serving_core.hpp"
#include "widget_gateway/http/server.hpp"

namespace wg::process {

using frontend::PublicHandler;
using frontend::Readiness;
using serving::ProcessParts;
using serving::ServingCore;

class Worker {
 public:
  Worker(unsigned index, unsigned workers, const config::Config& config,
         const redis::Settings& redis_settings, ProcessParts parts, const Readiness& readiness,
         frontend::ClientLimiters limiters, accesslog::AccessLog* access_log);
  // Joins the thread (after stop()).
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // TLS for the public listener (null: plain); call before start().
  void use_tls(std::shared_ptr<const http::TlsServerContext> tls) {
    server_.set_tls(std::move(tls));
  }
  // Binds the public port, shared with the other workers; call before start().
  boost::asio::ip::tcp::endpoint bind(const boost::asio::ip::tcp::endpoint& endpoint);
  // Starts Redis, the accept loop and the thread.
  void start();
  // From any thread: drains the listener (up to `timeout`), closes the worker's connections
  // and ends its thread; `done` runs on the worker's thread when it has drained.
  void stop(std::chrono::steady_clock::duration timeout, std::function<void()> done);
  // From any thread: applies reloadable settings on the worker's thread.
  void apply(const config::Config& config, frontend::ClientLimiters limiters);
  // From any thread: the sentinels announced a new Redis primary; the worker's connection
  // follows it (redis::Client::use_primary, on the worker's thread).
  void use_redis_primary(std::string host, std::uint16_t port);

  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }
  // Worker thread only (post to executor() from elsewhere).
  ServingCore& core() { return core_; }
  // Safe from any thread.
  const http::ServerStats& server_stats() const { return server_.stats(); }
  std::size_t l1_bytes() const { return core_.l1.bytes(); }
  // The worker's finished spans; thread-safe (the exporter drains it on the control thread).
  tracing::SpanQueue& span_queue() { return core_.tracer.queue(); }
  // Samples callers forced past their budget; any thread.
  std::uint64_t forced_samples_declined() const { return core_.tracer.forced_declined(); }
  std::size_t l1_entries() const { return core_.l1.entries(); }
  std::uint64_t l1_evictions() const { return core_.l1.stats().evictions; }
  bool redis_connected() const { return core_.redis.connected(); }
  // Connected, and no error reply (auth, permissions, READONLY, OOM...) lately.
  bool redis_usable() const { return frontend::redis_usable(core_.redis); }

 private:
  unsigned index_;
  unsigned workers_;
  // One thread runs it, and only that thread touches the worker's sockets: the reactor skips
  // its per-socket locks (other threads still post to it, under the scheduler's lock).
  boost::asio::io_context ioc_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  ServingCore core_;
  PublicHandler handler_;
  http::HttpServer server_;
  std::thread thread_;
};

// This worker's share of an L1 budget (every worker holds its own copies of the entries it
// serves).
std::size_t l1_share(std::size_t l1_max_bytes, unsigned workers);

}  // namespace wg::process
