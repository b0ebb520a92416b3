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

ReadinessAnswer readiness_of(const ReadinessFacts& f) {
  if (f.draining) return {503, "draining"};
  const bool upstream_usable =
      !f.circuit_open && !f.upstream_hold && !f.quota_exhausted && f.lease_left;
  if (!f.redis_up && !f.copies_in_l1 && !upstream_usable) return {503, "degraded"};
  if (!f.redis_up || f.circuit_open || f.upstream_hold || f.quota_exhausted) {
    return {200, "degraded"};
  }
  return {200, "ready"};
}

http::Response Readiness::response(bool detail) const {
  const quota::Snapshot quota = quota_.snapshot();
  ReadinessFacts facts;
  facts.draining = draining_.load();
  facts.redis_up = redis_up_();
  facts.circuit_open = circuit_open_.load();
  const std::chrono::seconds hold = upstream_hold_ ? upstream_hold_() : std::chrono::seconds(0);
  facts.upstream_hold = hold.count() > 0;
  facts.quota_exhausted = quota.mode == quota::Mode::exhausted;
  facts.lease_left = quota.limit == 0 || quota.own_lease > 0;
  // Asked only when it decides: L1 sizes are summed over the workers.
  facts.copies_in_l1 = !facts.draining && !facts.redis_up && copies_in_l1_();
  const ReadinessAnswer answer = readiness_of(facts);
  if (!detail)
    return local_json(answer.status, "{\"status\":\"" + std::string(answer.word) + "\"}");

  std::string body =
      "{\"status\":\"" + std::string(answer.word) + "\",\"redis\":\"" +
      (facts.redis_up ? "up" : "down") + "\",\"upstream\":\"" +
      (facts.circuit_open ? "circuit-open" : "ok") + "\"" +
      // The contract fixes "upstream"'s values: a hold is a member of its own.
      (facts.upstream_hold ? ",\"upstream_hold_seconds\":" + std::to_string(hold.count())
                           : std::string()) +
      ",\"quota\":\"" + std::string(quota::to_string(quota.mode)) + "\"}";
  return local_json(answer.status, std::move(body));
}

}  // namespace wg::frontend
