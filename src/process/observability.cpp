#include "process/observability.hpp"

#include "widget_gateway/metrics/process_metrics.hpp"

namespace wg::process {

void DegradedTime::set(bool degraded, SteadyTime now) {
  std::lock_guard lock(mutex_);
  if (degraded && !since_) since_ = now;
  if (!degraded && since_) {
    total_ += now - *since_;
    since_.reset();
  }
}

double DegradedTime::seconds(SteadyTime now) const {
  std::lock_guard lock(mutex_);
  auto total = total_;
  if (since_) total += now - *since_;
  return std::chrono::duration<double>(total).count();
}

Observability::Observability(Clock& clock, const config::Config& config, RandomSource& random,
                             metrics::ScrapeSources sources)
    : clock_(clock),
      access_log_(config.log.access_log, config.log.sample, random),
      metrics_(registry_, [&] {
        sources.access_log_dropped = [this] { return static_cast<double>(access_log_.dropped()); };
        return std::move(sources);
      }()) {
  config_loaded();
  metrics::register_process_metrics(registry_);
  // Degraded from the start: no connection is up until the workers' are.
  redis_degraded_.set(true, clock_.steady_now());
  metrics_.redis_state(false);
  registry_.callback_counter("wg_redis_degraded_seconds_total",
                             "Time spent without a Redis connection.", {},
                             [this] { return redis_degraded_.seconds(clock_.steady_now()); });
}

void Observability::start_tracing(boost::asio::any_io_executor control,
                                  const config::TracingConfig& tracing,
                                  std::vector<tracing::SpanQueue*> queues,
                                  std::function<std::uint64_t()> spans_dropped,
                                  std::function<std::uint64_t()> forced_declined) {
  if (!tracing.otlp_endpoint.empty()) {
    tracing::ExporterSettings settings;
    if (!tracing::split_endpoint(tracing.otlp_endpoint, settings)) {
      throw std::invalid_argument("tracing.otlp_endpoint: not an http:// URL");
    }
    settings.service_name = tracing.service_name;
    settings.service_version = WG_VERSION;
    settings.timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(tracing.export_timeout);
    exporter_ =
        std::make_unique<tracing::OtlpExporter>(control, std::move(settings), std::move(queues));
  }
  registry_.callback_counter(
      "wg_trace_spans_exported_total", "Spans the OTLP collector (tracing.otlp_endpoint) accepted.",
      {}, [this] { return exporter_ ? static_cast<double>(exporter_->exported()) : 0; });
  registry_.callback_counter(
      "wg_trace_spans_dropped_total",
      "Finished spans not exported: a worker's queue was full, or the collector did not take "
      "their batch.",
      {}, [this, spans_dropped = std::move(spans_dropped)] {
        const std::uint64_t failed = exporter_ ? exporter_->failed() : 0;
        return static_cast<double>(failed + spans_dropped());
      });
  registry_.callback_counter(
      "wg_trace_forced_samples_declined_total",
      "Requests whose traceparent asked for sampling past the per-worker budget of callers "
      "outside access.trusted_proxies: their trace was carried on, not recorded.",
      {}, [forced_declined = std::move(forced_declined)] {
        return static_cast<double>(forced_declined());
      });
  if (exporter_) exporter_->start();
}

boost::asio::awaitable<void> Observability::stop_tracing() {
  if (exporter_) co_await exporter_->stop();
}

void Observability::redis_state(bool up) {
  metrics_.redis_state(up);
  redis_degraded_.set(!up, clock_.steady_now());
}

void Observability::config_loaded() {
  metrics_.config_loaded(unix_seconds(clock_.wall_now()));
}

void Observability::config_reload(bool accepted) {
  metrics_.config_reload(accepted, unix_seconds(clock_.wall_now()));
}

void Observability::apply(const config::LogConfig& log) {
  access_log_.set_sample(log.sample);
  access_log_.reopen();
}

}  // namespace wg::process
