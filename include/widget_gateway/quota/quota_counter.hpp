#pragma once
// The monthly upstream budget, shared by every gateway instance through one Redis counter per
// month. A request is counted (atomically, by a Lua script) before it is sent upstream; once
// the limit is reached nothing more is sent. While Redis is unreachable, requests are counted
// here and added to Redis when it comes back, so a Redis outage loses no count.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/quota/quota_period.hpp"

namespace wg::redis {
class Client;
}

namespace wg::quota {

enum class Mode { normal, economy, exhausted };
std::string_view to_string(Mode mode);

// Which mode `used` of `limit` means; limit 0 is unlimited and always normal.
Mode mode_for(std::uint64_t used, std::uint64_t limit, double economy_at);

struct Snapshot {
  std::string month;  // "YYYY-MM"
  std::uint64_t used = 0;
  std::uint64_t limit = 0;
  WallTime resets_at{};
  Mode mode = Mode::normal;
  bool counted_locally = false;        // some of `used` is still waiting to reach Redis
  std::chrono::minutes utc_offset{0};  // of the month boundaries
};

// Process-wide and thread-safe (one small mutex, never held across I/O): every io worker
// counts through it with its own Redis connection, so the process keeps one view of the month.
class QuotaCounter {
 public:
  QuotaCounter(Clock& clock, const config::QuotaConfig& config);

  struct Grant {
    bool allowed = false;
    std::uint64_t used = 0;  // after this request, when allowed
    QuotaPeriod period;
  };
  // Counts one upstream request if the monthly limit allows it, through `redis` (the calling
  // worker's connection). Never fails: without Redis the count is kept in process.
  boost::asio::awaitable<Grant> acquire(redis::Client& redis);

  // Adds what was counted in process during a Redis outage to Redis, and refreshes the view
  // of the shared counter. Called when a Redis connection (re)connects.
  boost::asio::awaitable<void> reconcile(redis::Client& redis);

  Snapshot snapshot() const;
  void set_config(const config::QuotaConfig& config);  // SIGHUP

 private:
  struct Pending {
    QuotaPeriod period;
    std::uint64_t count = 0;  // counted here, not yet in Redis
  };
  struct Local {
    std::string month;                       // the month redis_used belongs to
    std::uint64_t redis_used = 0;            // last value seen in Redis for that month
    std::map<std::string, Pending> pending;  // by month
  };
  QuotaPeriod current_period() const;
  std::uint64_t used_locked(const std::string& month) const;

  Clock& clock_;
  mutable std::mutex mutex_;
  config::QuotaConfig config_;
  Local local_;
  Mode last_mode_ = Mode::normal;  // for the quota_mode event on every change
  bool reconciling_ = false;       // a reconcile() is adding `pending` to Redis

  // Whether traffic moved the quota into another mode (logged by the caller, after unlocking).
  struct ModeChange {
    Mode from;
    Mode to;
  };
  std::optional<ModeChange> note_mode_locked(std::uint64_t used, std::uint64_t limit);
};

}  // namespace wg::quota
