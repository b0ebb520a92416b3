#include "process/reload.hpp"

#include "widget_gateway/client_policy/rate_limiter.hpp"

namespace wg::process {

config::Config running_after_reload(const config::Config& started, const config::Config& fresh,
                                    bool tls_files_read) {
  config::Config running = fresh;
  running.server = started.server;
  if (tls_files_read) {
    running.server.tls_cert_file = fresh.server.tls_cert_file;
    running.server.tls_key_file = fresh.server.tls_key_file;
  }
  running.server.public_readyz_detail = fresh.server.public_readyz_detail;
  running.upstream = started.upstream;
  running.redis = started.redis;
  running.admin.listen = started.admin.listen;
  running.admin.tls_cert_file = started.admin.tls_cert_file;
  running.admin.tls_key_file = started.admin.tls_key_file;
  running.log.access_log = started.log.access_log;
  running.tracing = started.tracing;
  return running;
}

std::shared_ptr<client_policy::RateLimiter> SharedLimiter::for_shape(double rate,
                                                                     std::uint32_t burst) {
  const std::pair<double, std::uint32_t> shape{rate, burst};
  if (shape != shape_) {
    limiter_ = rate > 0 ? std::make_shared<client_policy::RateLimiter>(rate, burst) : nullptr;
    shape_ = shape;
  }
  return limiter_;
}

frontend::ClientLimiters SharedLimiters::for_config(const config::Config& config) {
  return {
      misses.for_shape(config.access.per_ip_rate, config.access.per_ip_burst),
      unknown_ids.for_shape(config.access.unknown_per_ip_rate, config.access.unknown_per_ip_burst)};
}

}  // namespace wg::process
