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
  if (f.draining) return {503, ReadyState::draining};
  const bool upstream_usable =
      !f.circuit_open && !f.upstream_hold && !f.quota_exhausted && f.lease_left;
  if (!f.redis_up && !f.copies_in_l1 && !upstream_usable) return {503, ReadyState::degraded};
  if (!f.redis_up || f.circuit_open || f.upstream_hold || f.quota_exhausted) {
    return {200, ReadyState::degraded};
  }
  return {200, ReadyState::ready};
}

Readiness::Reading Readiness::read() const {
  const quota::Snapshot quota = quota_.snapshot();
  Reading r;
  ReadinessFacts& facts = r.facts;
  facts.draining = draining_.load();
  facts.redis_up = redis_up_();
  facts.circuit_open = circuit_open_.load();
  r.hold = upstream_hold_ ? upstream_hold_() : std::chrono::seconds(0);
  facts.upstream_hold = r.hold.count() > 0;
  facts.quota_exhausted = quota.mode == quota::Mode::exhausted;
  facts.lease_left = quota.limit == 0 || quota.own_lease > 0;
  // Asked only when it decides: L1 sizes are summed over the workers.
  facts.copies_in_l1 = !facts.draining && !facts.redis_up && copies_in_l1_();
  r.answer = readiness_of(facts);
  r.quota_mode = quota::to_string(quota.mode);
  return r;
}

http::Response Readiness::response(bool detail) const {
  const Reading r = read();
  if (!detail) {
    return local_json(r.answer.status,
                      "{\"status\":\"" + std::string(to_string(r.answer.state)) + "\"}");
  }
  std::string body =
      "{\"status\":\"" + std::string(to_string(r.answer.state)) + "\",\"redis\":\"" +
      (r.facts.redis_up ? "up" : "down") + "\",\"upstream\":\"" +
      (r.facts.circuit_open ? "circuit-open" : "ok") + "\"" +
      // The contract fixes "upstream"'s values: a hold is a member of its own.
      (r.facts.upstream_hold ? ",\"upstream_hold_seconds\":" + std::to_string(r.hold.count())
                             : std::string()) +
      ",\"quota\":\"" + std::string(r.quota_mode) + "\"}";
  return local_json(r.answer.status, std::move(body));
}

}  // namespace wg::frontend
