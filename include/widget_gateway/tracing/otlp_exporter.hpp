#pragma once
// Sends the workers' finished spans to an OTLP/HTTP collector as JSON
// (POST <endpoint>, Content-Type: application/json), in batches, from one thread that is not
// an io worker's (the control thread). Each post is bounded by a timeout (resolve, connect,
// write and read together); a batch that cannot be posted is dropped and counted, never
// retried: tracing must not hold memory or time the gateway needs for serving.

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "widget_gateway/tracing/otlp_json.hpp"
#include "widget_gateway/tracing/span_queue.hpp"

namespace wg::tracing {

struct ExporterSettings {
  std::string host;  // of the collector
  std::string port;
  std::string target = "/v1/traces";
  std::string service_name = "widget-gateway";
  std::string service_version;
  std::chrono::milliseconds timeout{5000};   // one post, end to end
  std::chrono::milliseconds interval{1000};  // between rounds of draining the queues
  std::size_t max_batch = 512;               // spans per post
};

// Splits an `http://host[:port][/path]` endpoint (validated by the config loader) into the
// exporter's host, port and target; the target defaults to /v1/traces. False if it is not
// such a URL.
bool split_endpoint(std::string_view url, ExporterSettings& settings);

// Threads: all on `ex`'s thread (the control thread); the queues are the workers'.
class OtlpExporter {
 public:
  OtlpExporter(boost::asio::any_io_executor ex, ExporterSettings settings,
               std::vector<SpanQueue*> queues);

  // Starts the loop: every interval, what the queues hold goes out in batches.
  void start();
  // Posts what is queued one last time (bounded by the timeout) and ends the loop.
  boost::asio::awaitable<void> stop();

  std::uint64_t exported() const { return exported_.load(std::memory_order_relaxed); }
  // Spans of batches the collector did not take (refused, unreachable, timed out).
  std::uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> export_queued();
  // The error of one post, or {} for a 2xx answer.
  boost::asio::awaitable<std::string> post(const std::string& body);

  boost::asio::any_io_executor ex_;
  ExporterSettings settings_;
  std::vector<SpanQueue*> queues_;
  boost::asio::steady_timer timer_;
  bool stopping_ = false;
  bool failing_ = false;  // logged once per failing stretch
  std::atomic<std::uint64_t> exported_{0};
  std::atomic<std::uint64_t> failed_{0};
};

}  // namespace wg::tracing
