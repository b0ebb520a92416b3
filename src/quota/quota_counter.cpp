#include "widget_gateway/quota/quota_counter.hpp"

#include <cstdlib>

#include "widget_gateway/common/log.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::quota {
namespace asio = boost::asio;

namespace {

// KEYS[1] counter; ARGV[1] limit (0 = none); ARGV[2] expiry (unix seconds).
// Returns {allowed, used}. Refuses without counting once the limit is reached (the script is
// atomic, so the increment taken back is never seen). One command inside in the usual case
// (Redis counts those too): the expiry is set by whoever creates the month's key (this script
// or the reconcile one), not on every request.
constexpr std::string_view kAcquireScript = R"lua(
local limit = tonumber(ARGV[1])
local used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('EXPIREAT', KEYS[1], ARGV[2]) end
if limit > 0 and used > limit then
  redis.call('DECR', KEYS[1])
  return {0, used - 1}
end
return {1, used}
)lua";

// KEYS[1] counter; ARGV[1] increment; ARGV[2] expiry. Returns the new total.
constexpr std::string_view kAddScript = R"lua(
local used = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIREAT', KEYS[1], ARGV[2])
return used
)lua";

std::string unix_seconds(WallTime t) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

}  // namespace

std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::normal:
      return "normal";
    case Mode::economy:
      return "economy";
    case Mode::exhausted:
      return "exhausted";
  }
  return "normal";
}

Mode mode_for(std::uint64_t used, std::uint64_t limit, double economy_at) {
  if (limit == 0) return Mode::normal;
  if (used >= limit) return Mode::exhausted;
  if (static_cast<double>(used) >= economy_at * static_cast<double>(limit)) return Mode::economy;
  return Mode::normal;
}

QuotaCounter::QuotaCounter(Clock& clock, const config::QuotaConfig& config)
    : clock_(clock), config_(config) {}

QuotaPeriod QuotaCounter::current_period() const {
  return quota_period(clock_.wall_now(), config_.utc_offset);
}

std::uint64_t QuotaCounter::used_locked(const std::string& month) const {
  std::uint64_t used = local_.month == month ? local_.redis_used : 0;
  if (auto it = local_.pending.find(month); it != local_.pending.end()) used += it->second.count;
  return used;
}

asio::awaitable<QuotaCounter::Grant> QuotaCounter::acquire(redis::Client& redis) {
  std::uint64_t limit;
  QuotaPeriod period;
  {
    std::lock_guard lock(mutex_);
    limit = config_.monthly_limit;
    period = current_period();
  }
  Grant grant;
  grant.period = period;

  // Arguments are built before co_await: GCC 12 destroys temporaries in a co_await
  // expression twice.
  std::vector<std::string> args{"EVAL",
                                std::string(kAcquireScript),
                                "1",
                                quota_key(period),
                                std::to_string(limit),
                                unix_seconds(quota_key_expiry(period))};
  auto [ec, reply] = co_await redis.command(std::move(args));
  std::optional<ModeChange> change;
  if (!ec && reply.type == redis::Reply::Type::array && reply.elements.size() == 2) {
    std::lock_guard lock(mutex_);
    grant.allowed = reply.elements[0].integer == 1;
    std::uint64_t redis_used = static_cast<std::uint64_t>(reply.elements[1].integer);
    if (local_.month != period.month || redis_used > local_.redis_used) {
      local_.month = period.month;
      local_.redis_used = redis_used;
    }
    grant.used = used_locked(period.month);
    change = note_mode_locked(grant.used, limit);
  } else {
    // Redis unreachable (or the script failed): count here; reconcile() adds it to Redis
    // later. A timed-out script may have counted in Redis as well: over-counting is the safe
    // side.
    std::lock_guard lock(mutex_);
    std::uint64_t used = used_locked(period.month);
    if (limit > 0 && used >= limit) {
      grant.allowed = false;
      grant.used = used;
    } else {
      Pending& pending = local_.pending[period.month];
      pending.period = period;
      ++pending.count;
      grant.allowed = true;
      grant.used = used + 1;
    }
    change = note_mode_locked(grant.used, limit);
  }
  if (change) {
    log::info("quota_mode", {{"from", to_string(change->from)},
                             {"to", to_string(change->to)},
                             {"used", grant.used},
                             {"limit", limit}});
  }
  co_return grant;
}

asio::awaitable<void> QuotaCounter::reconcile(redis::Client& redis) {
  // One reconcile at a time (every worker's connection calls it when it comes back): the
  // counts are taken out of `pending` only once Redis has them, so the view never dips below
  // what was spent, and a second reconcile must not add them again meanwhile.
  std::map<std::string, Pending> pending;
  {
    std::lock_guard lock(mutex_);
    if (reconciling_) co_return;
    reconciling_ = true;
    pending = local_.pending;
  }
  for (const auto& [month, p] : pending) {
    std::vector<std::string> args{"EVAL",
                                  std::string(kAddScript),
                                  "1",
                                  quota_key(p.period),
                                  std::to_string(p.count),
                                  unix_seconds(quota_key_expiry(p.period))};
    auto [ec, reply] = co_await redis.command(std::move(args));
    if (ec || reply.type != redis::Reply::Type::integer) continue;  // kept for the next time
    {
      std::lock_guard lock(mutex_);
      auto it = local_.pending.find(month);
      if (it != local_.pending.end()) {
        it->second.count -= std::min(it->second.count, p.count);
        if (it->second.count == 0) local_.pending.erase(it);
      }
      if (local_.month == p.period.month || local_.month.empty()) {
        local_.month = p.period.month;
        local_.redis_used = static_cast<std::uint64_t>(reply.integer);
      }
    }
    log::info("quota_reconciled", {{"month", p.period.month}, {"added", p.count}});
  }
  {
    std::lock_guard lock(mutex_);
    reconciling_ = false;
  }

  // Refresh the view of the shared counter: other instances kept counting meanwhile.
  QuotaPeriod period;
  {
    std::lock_guard lock(mutex_);
    period = current_period();
  }
  std::vector<std::string> get_args{"GET", quota_key(period)};
  auto [ec, reply] = co_await redis.command(std::move(get_args));
  if (!ec && reply.type == redis::Reply::Type::string) {
    std::lock_guard lock(mutex_);
    local_.month = period.month;
    local_.redis_used = std::strtoull(reply.str.c_str(), nullptr, 10);
  }
}

std::optional<QuotaCounter::ModeChange> QuotaCounter::note_mode_locked(std::uint64_t used,
                                                                       std::uint64_t limit) {
  const Mode mode = mode_for(used, limit, config_.economy_at);
  if (mode == last_mode_) return std::nullopt;
  ModeChange change{last_mode_, mode};
  last_mode_ = mode;
  return change;
}

Snapshot QuotaCounter::snapshot() const {
  std::lock_guard lock(mutex_);
  QuotaPeriod period = current_period();
  Snapshot s;
  s.month = period.month;
  s.used = used_locked(period.month);
  s.limit = config_.monthly_limit;
  s.resets_at = period.resets_at;
  s.utc_offset = config_.utc_offset;
  s.mode = mode_for(s.used, s.limit, config_.economy_at);
  auto it = local_.pending.find(period.month);
  s.counted_locally = it != local_.pending.end() && it->second.count > 0;
  return s;
}

void QuotaCounter::set_config(const config::QuotaConfig& config) {
  std::lock_guard lock(mutex_);
  config_ = config;
}

}  // namespace wg::quota
