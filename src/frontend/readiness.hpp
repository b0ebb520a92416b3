#pragma once
// /readyz: 200 whenever the gateway can serve, "degraded" when Redis is down or unusable, the
// upstream circuit is open, upstream's own Retry-After holds requests back (then with
// "upstream_hold_seconds") or the quota is exhausted; 503 while draining, and 503 "degraded"
// while it can serve nothing at all (no Redis, no copy in L1, and no upstream request it may
// send: the circuit open, upstream's hold, or a quota limit with no lease left).

#include <atomic>
#include <chrono>
#include <functional>
#include <string_view>

#include "widget_gateway/http/response.hpp"

namespace wg::quota {
class QuotaCounter;
}
namespace wg::redis {
class Client;
}

namespace wg::frontend {

// What /readyz answers from.
struct ReadinessFacts {
  bool draining = false;
  bool redis_up = false;  // every connection up and usable
  bool circuit_open = false;
  bool upstream_hold = false;  // upstream's own 429/503 Retry-After is in force
  bool quota_exhausted = false;
  bool copies_in_l1 = false;  // some worker's L1 holds an entry
  // An upstream request may be sent without asking Redis: an unlimited quota, or some of this
  // instance's lease left.
  bool lease_left = false;
};

enum class ReadyState { ready, degraded, draining };
// The status word /readyz shows: "ready", "degraded" or "draining".
constexpr std::string_view to_string(ReadyState state) {
  switch (state) {
    case ReadyState::ready:
      return "ready";
    case ReadyState::degraded:
      return "degraded";
    case ReadyState::draining:
      return "draining";
  }
  return "degraded";
}

struct ReadinessAnswer {
  unsigned status = 200;
  ReadyState state = ReadyState::ready;
};

// The one rule for /readyz: with Redis up its cache can serve; without it, L1 copies can, and
// so can upstream while the circuit is closed and the quota lets a request go without Redis.
ReadinessAnswer readiness_of(const ReadinessFacts& facts);

class Readiness {
 public:
  // `redis_up`: whether the process's Redis connections are up and usable (thread-safe), e.g.
  // every client's redis_usable(). "redis":"up" is never shown while it is false.
  // `copies_in_l1`: whether any worker's L1 holds an entry (thread-safe).
  // `upstream_hold`: the seconds left of upstream's hold, 0 when none (thread-safe); empty:
  // never held.
  Readiness(std::function<bool()> redis_up, std::function<bool()> copies_in_l1,
            const quota::QuotaCounter& quota,
            std::function<std::chrono::seconds()> upstream_hold = {})
      : redis_up_(std::move(redis_up)),
        copies_in_l1_(std::move(copies_in_l1)),
        upstream_hold_(std::move(upstream_hold)),
        quota_(quota) {}

  void set_draining() { draining_.store(true); }
  void set_circuit_open(bool open) { circuit_open_.store(open); }

  // What /readyz answers now; wg_ready and wg_degraded read this too. Any thread.
  ReadinessAnswer answer() const { return read().answer; }
  // What /readyz answers: the full JSON, or with `detail` false only {"status":...} (the
  // public listener under server.public_readyz_detail = false); the status code is the same.
  http::Response response(bool detail = true) const;

 private:
  struct Reading {
    ReadinessFacts facts;
    ReadinessAnswer answer;
    std::chrono::seconds hold{0};  // left of upstream's hold
    std::string_view quota_mode;
  };
  Reading read() const;

  std::function<bool()> redis_up_;
  std::function<bool()> copies_in_l1_;
  std::function<std::chrono::seconds()> upstream_hold_;
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
