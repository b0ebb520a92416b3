#include "readiness.hpp"

#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::frontend {

bool redis_usable(const redis::Client& client) {
  return client.connected() && client.healthy();
}

http::Response local_json(unsigned status, std::string body) {
  http::Response response;
  response.status = status;
  response.add_header("Content-Type", "application/json");
  response.add_header("Cache-Control", "no-store");
  response.set_body(std::move(body));
  return response;
}

http::Response Readiness::response() const {
  const bool redis_up = redis_up_();
  const bool circuit_open = circuit_open_.load();
  const quota::Mode mode = quota_.snapshot().mode;
  const bool draining = draining_.load();

  std::string status = "ready";
  if (draining) {
    status = "draining";
  } else if (!redis_up || circuit_open || mode == quota::Mode::exhausted) {
    status = "degraded";
  }
  std::string body = "{\"status\":\"" + status + "\",\"redis\":\"" + (redis_up ? "up" : "down") +
                     "\",\"upstream\":\"" + (circuit_open ? "circuit-open" : "ok") +
                     "\",\"quota\":\"" + std::string(quota::to_string(mode)) + "\"}";
  return local_json(draining ? 503 : 200, std::move(body));
}

}  // namespace wg::frontend
