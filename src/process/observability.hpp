#pragma once
// What the process tells its operators besides its answers: the metric registry and the
// gateway's metric set (/metrics on the admin listener), the access log, the time spent without
// Redis, and the span exporter (docs/tracing.md). Built on the control thread; the metric set
// and the access log are written from every worker (sharded or queued: docs/threading.md).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "widget_gateway/accesslog/access_log.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/metrics/registry.hpp"
#include "widget_gateway/tracing/otlp_exporter.hpp"

namespace wg::process {

// How long Redis has been unreachable, for wg_redis_degraded_seconds_total. Thread-safe.
class DegradedTime {
 public:
  void set(bool degraded, SteadyTime now);
  double seconds(SteadyTime now) const;

 private:
  mutable std::mutex mutex_;
  std::optional<SteadyTime> since_;
  SteadyTime::duration total_{};
};

class Observability {
 public:
  // `sources`: what /metrics reads at scrape from the other parts (they must outlive this).
  Observability(Clock& clock, const config::Config& config, RandomSource& random,
                metrics::ScrapeSources sources);

  metrics::Registry& registry() { return registry_; }
  metrics::GatewayMetrics& metrics() { return metrics_; }
  accesslog::AccessLog& access_log() { return access_log_; }

  // With tracing.otlp_endpoint: one exporter on `control`, draining the workers' span queues.
  // The trace counters read `spans_dropped` and `forced_declined` (the workers' own counts).
  // Throws std::invalid_argument for an endpoint that is not an http:// URL.
  void start_tracing(boost::asio::any_io_executor control, const config::TracingConfig& tracing,
                     std::vector<tracing::SpanQueue*> queues,
                     std::function<std::uint64_t()> spans_dropped,
                     std::function<std::uint64_t()> forced_declined);
  // The last requests' spans, at the end of the drain.
  boost::asio::awaitable<void> stop_tracing();

  // Every worker's Redis connection up or not (any thread).
  void redis_state(bool up);
  // A configuration was accepted at start or by a reload, or a reload rejected.
  void config_loaded();
  void config_reload(bool accepted);
  // SIGHUP: log.sample, and the access-log file reopened (rotation).
  void apply(const config::LogConfig& log);

 private:
  Clock& clock_;
  accesslog::AccessLog access_log_;
  metrics::Registry registry_;
  DegradedTime redis_degraded_;
  metrics::GatewayMetrics metrics_;
  std::unique_ptr<tracing::OtlpExporter> exporter_;  // null: spans are not exported
};

}  // namespace wg::process
