#pragma once
// /readyz: 200 whenever the gateway can serve, "degraded" when Redis is down or unusable, the
// upstream circuit is open or the quota is exhausted; 503 while draining.

#include <atomic>
#include <functional>

#include "widget_gateway/http/response.hpp"

namespace wg::quota {
class QuotaCounter;
}
namespace wg::redis {
class Client;
}

namespace wg::frontend {

class Readiness {
 public:
  // `redis_up`: whether the process's Redis connections are up and usable (thread-safe), e.g.
  // every client's redis_usable(). "redis":"up" is never shown while it is false.
  Readiness(std::function<bool()> redis_up, const quota::QuotaCounter& quota)
      : redis_up_(std::move(redis_up)), quota_(quota) {}

  void set_draining() { draining_.store(true); }
  void set_circuit_open(bool open) { circuit_open_.store(open); }

  http::Response response() const;

 private:
  std::function<bool()> redis_up_;
  const quota::QuotaCounter& quota_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> circuit_open_{false};
};

// What /readyz calls up for one client: connected (which includes AUTH and SELECT) and
// healthy (no recent error reply, such as NOPERM or READONLY). Thread-safe.
bool redis_usable(const redis::Client& client);

// A small JSON answer that no cache should keep (health endpoints).
http::Response local_json(unsigned status, std::string body);

}  // namespace wg::frontend
