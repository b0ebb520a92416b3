#include "widget_gateway/quota/quota_counter.hpp"

#include <algorithm>
#include <vector>

#include "widget_gateway/common/log.hpp"
#include "widget_gateway/quota/pacing.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::quota {
namespace asio = boost::asio;

namespace {

// Burn is measured over windows this long; a lease covers about one window of it.
constexpr std::chrono::seconds kBurnWindow{30};
// No lease is larger than this, nor than this share of what the month has left: near the
// limit, leases shrink to one request and instances no longer hold back each other's quota.
constexpr std::uint64_t kMaxLease = 1000;
constexpr std::uint64_t kRemainingShare = 16;
// A lease nobody spent from for this long goes back to the fleet.
constexpr std::chrono::minutes kIdleReturn{5};
// While the fleet is known to be out of quota, a request is refused without asking Redis
// again for this long.
constexpr std::chrono::seconds kExhaustedRecheck{1};

// KEYS: 1 charged counter, 2 leases hash, 3 unknown counter.
// ARGV: 1 instance, 2 spent, 3 returned, 4 granted as the instance knows it, 5 wanted,
//       6 limit (0 = none), 7 expiry (unix seconds).
// The instance's figures are cumulative and applied as maxima, so the script is idempotent.
// The counter moves by what the instance spent beyond its grants (an unlimited quota counted
// while Redis was away), minus what it gave back, plus the new grant. `lost` tells the
// instance that Redis no longer has the grants it knew of (data loss): it then adopts what
// Redis has rebuilt from its figures.
// Returns {granted, spent, returned, charged, leased, lost, unknown_used}.
constexpr std::string_view kLeaseScript = R"lua(
local id = ARGV[1]
local f = redis.call('HMGET', KEYS[2], id .. ':g', id .. ':s', id .. ':r', 'leased')
local g = tonumber(f[1]) or 0
local s = tonumber(f[2]) or 0
local r = tonumber(f[3]) or 0
local leased = tonumber(f[4]) or 0
local lost = 0
if g < tonumber(ARGV[4]) then lost = 1 end
local before = g - s - r
local s2 = math.max(s, tonumber(ARGV[2]))
local r2 = math.max(r, tonumber(ARGV[3]))
local g2 = math.max(g, s2 + r2)
local delta = (g2 - g) - (r2 - r)
local charged = (tonumber(redis.call('GET', KEYS[1])) or 0) + delta
local grant = tonumber(ARGV[5])
local limit = tonumber(ARGV[6])
if limit > 0 then grant = math.max(0, math.min(grant, limit - charged)) end
g2 = g2 + grant
delta = delta + grant
charged = charged + grant
leased = leased + (g2 - s2 - r2) - before
if delta ~= 0 then redis.call('INCRBY', KEYS[1], delta) end
local unknown = tonumber(redis.call('GET', KEYS[3])) or 0
redis.call('HSET', KEYS[2], id .. ':g', g2, id .. ':s', s2, id .. ':r', r2, 'leased', leased)
redis.call('EXPIREAT', KEYS[1], ARGV[7])
redis.call('EXPIREAT', KEYS[2], ARGV[7])
return {g2, s2, r2, charged, leased, lost, unknown}
)lua";

constexpr std::string_view kRefundScript = R"lua(
local used = tonumber(redis.call('GET', KEYS[1])) or 0
if used > 0 then return redis.call('DECR', KEYS[1]) end
return 0
)lua";

// KEYS[1] unknown counter; ARGV 1 cap (-1 = none), 2 expiry. Returns {allowed, used}.
constexpr std::string_view kUnknownScript = R"lua(
local used = tonumber(redis.call('GET', KEYS[1])) or 0
local cap = tonumber(ARGV[1])
if cap >= 0 and used >= cap then return {0, used} end
used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('EXPIREAT', KEYS[1], ARGV[2]) end
return {1, used}
)lua";

std::string unix_seconds(WallTime t) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

std::uint64_t non_negative(long long value) {
  return value > 0 ? static_cast<std::uint64_t>(value) : 0;
}

std::uint64_t minus(std::uint64_t a, std::uint64_t b) {
  return a > b ? a - b : 0;
}

}  // namespace

struct QuotaCounter::Reply {
  Ledger ledger;
  std::uint64_t charged = 0;
  std::uint64_t leased = 0;
  bool lost = false;
  std::uint64_t unknown_used = 0;
};

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

Mode mode_for(std::uint64_t charged, std::uint64_t limit, double economy_at) {
  if (limit == 0) return Mode::normal;
  if (charged >= limit) return Mode::exhausted;
  if (static_cast<double>(charged) >= economy_at * static_cast<double>(limit)) {
    return Mode::economy;
  }
  return Mode::normal;
}

std::optional<std::uint64_t> unknown_limit(const config::QuotaConfig& config) {
  if (config.monthly_limit == 0) return std::nullopt;
  if (config.unknown_share <= 0) return 0;
  // At least one: a lookup is reserved while it is in flight, and with none a tiny limit
  // could never look up a new widget at all.
  return std::max<std::uint64_t>(
      1,
      static_cast<std::uint64_t>(config.unknown_share * static_cast<double>(config.monthly_limit)));
}

std::uint64_t Snapshot::remaining() const {
  return limit == 0 ? 0 : minus(limit, used + leased);
}

QuotaCounter::QuotaCounter(Clock& clock, const config::QuotaConfig& config, std::string instance,
                           cache::KeySpace keys)
    : clock_(clock), instance_(std::move(instance)), keys_(std::move(keys)), config_(config) {}

QuotaPeriod QuotaCounter::current_period() const {
  return quota_period(clock_.wall_now(), config_.utc_offset);
}

QuotaCounter::Month& QuotaCounter::month_locked(const QuotaPeriod& period) {
  auto [it, inserted] = months_.try_emplace(period.month);
  if (inserted) {
    it->second.period = period;
    it->second.window_start = clock_.steady_now();
  }
  return it->second;
}

void QuotaCounter::note_spend_locked(Month& month) {
  const SteadyTime now = clock_.steady_now();
  if (now - month.window_start >= kBurnWindow) {
    month.previous_window_spends =
        now - month.window_start < 2 * kBurnWindow ? month.window_spends : 0;
    month.window_spends = 0;
    month.window_start = now;
  }
  ++month.window_spends;
  ++month.ledger.spent;
  month.last_spend = now;
}

std::uint64_t QuotaCounter::lease_size_locked(const Month& month) const {
  std::uint64_t want =
      std::min(std::max(month.window_spends, month.previous_window_spends) + 1, kMaxLease);
  if (config_.monthly_limit > 0) {
    const std::uint64_t left = minus(config_.monthly_limit, month.charged);
    want = std::min(want, std::max<std::uint64_t>(1, left / kRemainingShare));
  }
  return want;
}

asio::awaitable<std::optional<QuotaCounter::Reply>> QuotaCounter::exchange(redis::Client& redis,
                                                                           QuotaPeriod period,
                                                                           std::uint64_t give_back,
                                                                           std::uint64_t want) {
  std::vector<std::string> args;
  std::uint64_t sent_spent;
  {
    std::lock_guard lock(mutex_);
    Month& month = month_locked(period);
    // Given back here, before the script runs: what is on its way back is never spent.
    month.ledger.returned += std::min(give_back, month.ledger.left());
    sent_spent = month.ledger.spent;
    args = {"EVAL",
            std::string(kLeaseScript),
            "3",
            quota_key(period, keys_),
            leases_key(period, keys_),
            unknown_key(period, keys_),
            instance_,
            std::to_string(month.ledger.spent),
            std::to_string(month.ledger.returned),
            std::to_string(month.ledger.granted),
            std::to_string(want),
            std::to_string(config_.monthly_limit),
            unix_seconds(quota_key_expiry(period))};
  }
  auto [ec, reply] = co_await redis.command(std::move(args));
  if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 7) {
    if (!ec && reply.type == redis::Reply::Type::error) {
      log::warn("quota_redis_error", {{"reply", reply.str}});
    }
    co_return std::nullopt;
  }
  const auto& e = reply.elements;
  Reply out;
  out.ledger = {non_negative(e[0].integer), non_negative(e[1].integer), non_negative(e[2].integer)};
  out.charged = non_negative(e[3].integer);
  out.leased = non_negative(e[4].integer);
  out.lost = e[5].integer != 0;
  out.unknown_used = non_negative(e[6].integer);
  std::optional<ModeChange> change;
  {
    std::lock_guard lock(mutex_);
    adopt_locked(month_locked(period), out, sent_spent);
    change = note_mode_locked();
  }
  log_mode_change(change);
  co_return out;
}

void QuotaCounter::adopt_locked(Month& month, const Reply& reply, std::uint64_t sent_spent) {
  if (reply.lost) {
    log::warn("quota_ledger_rebuilt", {{"month", month.period.month},
                                       {"known_granted", month.ledger.granted},
                                       {"granted", reply.ledger.granted}});
    month.ledger.granted = reply.ledger.granted;
  } else {
    // Replies may arrive out of order (each worker has its own connection): grants only grow.
    month.ledger.granted = std::max(month.ledger.granted, reply.ledger.granted);
  }
  month.reported_spent = std::max(month.reported_spent, sent_spent);
  month.charged = reply.charged;
  month.leased = reply.leased;
  month.unknown_used = reply.unknown_used;
}

asio::awaitable<QuotaCounter::Grant> QuotaCounter::acquire(redis::Client& redis) {
  Grant grant;
  std::uint64_t want = 0;
  std::optional<ModeChange> change;
  {
    std::lock_guard lock(mutex_);
    grant.period = current_period();
    Month& month = month_locked(grant.period);
    if (month.ledger.left() > 0) {
      note_spend_locked(month);
      grant.verdict = Verdict::allowed;
    } else if (config_.monthly_limit > 0 && month.charged >= config_.monthly_limit &&
               month.refused_at && clock_.steady_now() - *month.refused_at < kExhaustedRecheck) {
      grant.verdict = Verdict::exhausted;
    } else {
      want = lease_size_locked(month);
    }
    if (want == 0) change = note_mode_locked();
  }
  if (want == 0) {
    log_mode_change(change);
    co_return grant;
  }

  std::optional<Reply> reply = co_await exchange(redis, grant.period, 0, want);
  {
    std::lock_guard lock(mutex_);
    Month& month = month_locked(grant.period);
    if (month.ledger.left() > 0 || config_.monthly_limit == 0) {
      // Unlimited: spent even beyond the lease (Redis away); the next report counts it.
      note_spend_locked(month);
      grant.verdict = Verdict::allowed;
    } else {
      grant.verdict = reply ? Verdict::exhausted : Verdict::unavailable;
      if (reply) month.refused_at = clock_.steady_now();
    }
    change = note_mode_locked();
  }
  log_mode_change(change);
  co_return grant;
}

asio::awaitable<QuotaCounter::Grant> QuotaCounter::acquire_unknown(redis::Client& redis) {
  Grant grant;
  std::optional<std::uint64_t> cap;
  {
    std::lock_guard lock(mutex_);
    grant.period = current_period();
    cap = unknown_limit(config_);
  }
  std::vector<std::string> args{"EVAL",
                                std::string(kUnknownScript),
                                "1",
                                unknown_key(grant.period, keys_),
                                cap ? std::to_string(*cap) : std::string("-1"),
                                unix_seconds(quota_key_expiry(grant.period))};
  auto [ec, reply] = co_await redis.command(std::move(args));
  if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 2) {
    // Without a cap nothing needs Redis; with one, the budget cannot be checked: refuse.
    grant.verdict = cap ? Verdict::unavailable : Verdict::allowed;
    co_return grant;
  }
  std::lock_guard lock(mutex_);
  month_locked(grant.period).unknown_used = non_negative(reply.elements[1].integer);
  grant.verdict = reply.elements[0].integer == 1 ? Verdict::allowed : Verdict::exhausted;
  co_return grant;
}

asio::awaitable<void> QuotaCounter::refund_unknown(redis::Client& redis, QuotaPeriod period) {
  std::vector<std::string> args{"EVAL", std::string(kRefundScript), "1",
                                unknown_key(period, keys_)};
  auto [ec, reply] = co_await redis.command(std::move(args));
  if (!ec && reply.type == redis::Reply::Type::integer) {
    std::lock_guard lock(mutex_);
    month_locked(period).unknown_used = non_negative(reply.integer);
  }
  // A refund that did not arrive leaves the budget counted a little high: the safe side.
}

asio::awaitable<void> QuotaCounter::report(redis::Client& redis) {
  struct Due {
    QuotaPeriod period;
    std::uint64_t give_back;
  };
  std::vector<Due> due;
  {
    std::lock_guard lock(mutex_);
    const QuotaPeriod current = current_period();
    month_locked(current);  // the fleet's figures of this month are refreshed even unspent
    const SteadyTime now = clock_.steady_now();
    for (auto& [name, month] : months_) {
      const bool past = name != current.month;
      const bool idle = month.ledger.left() > 0 && now - month.last_spend >= kIdleReturn;
      const std::uint64_t give_back = past || idle ? month.ledger.left() : 0;
      if (!past || give_back > 0 || month.reported_spent != month.ledger.spent) {
        due.push_back({month.period, give_back});
      }
    }
  }
  for (const Due& d : due) {
    co_await exchange(redis, d.period, d.give_back, 0);
  }
  std::lock_guard lock(mutex_);
  const std::string current = current_period().month;
  std::erase_if(months_, [&](const auto& item) {
    const Month& m = item.second;
    return item.first != current && m.ledger.left() == 0 && m.reported_spent == m.ledger.spent;
  });
}

asio::awaitable<bool> QuotaCounter::release(redis::Client& redis) {
  std::vector<QuotaPeriod> periods;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, month] : months_) periods.push_back(month.period);
  }
  bool settled = true;
  for (const QuotaPeriod& period : periods) {
    std::uint64_t left;
    {
      std::lock_guard lock(mutex_);
      left = months_[period.month].ledger.left();
    }
    std::optional<Reply> reply = co_await exchange(redis, period, left, 0);
    if (!reply) settled = false;
  }
  std::lock_guard lock(mutex_);
  for (const auto& [name, month] : months_) {
    if (month.ledger.left() > 0 || month.reported_spent != month.ledger.spent) settled = false;
  }
  co_return settled;
}

LeaseState QuotaCounter::lease_state() const {
  std::lock_guard lock(mutex_);
  LeaseState state{instance_, {}};
  for (const auto& [name, month] : months_) {
    if (month.ledger != Ledger{}) state.ledgers[name] = month.ledger;
  }
  return state;
}

void QuotaCounter::restore(const LeaseState& state) {
  std::lock_guard lock(mutex_);
  instance_ = state.instance;
  const QuotaPeriod current = current_period();
  for (const auto& [name, ledger] : state.ledgers) {
    std::optional<QuotaPeriod> period = name == current.month
                                            ? std::optional<QuotaPeriod>(current)
                                            : period_of_month(name, config_.utc_offset);
    if (!period) continue;
    Month& month = month_locked(*period);
    month.ledger = ledger;
    month.last_spend = clock_.steady_now();  // not idle: it may still be spent from
  }
}

std::optional<QuotaCounter::ModeChange> QuotaCounter::note_mode_locked() {
  const Mode mode = snapshot_locked().mode;
  if (mode == last_mode_) return std::nullopt;
  ModeChange change{last_mode_, mode};
  last_mode_ = mode;
  return change;
}

void QuotaCounter::log_mode_change(const std::optional<ModeChange>& change) const {
  if (!change) return;
  const Snapshot s = snapshot();
  // Exhausted means misses without a stale copy are refused: an operator must hear of it.
  log::event(change->to == Mode::exhausted ? log::Level::warn : log::Level::info, "quota_mode",
             {{"from", to_string(change->from)},
              {"to", to_string(change->to)},
              {"used", s.used},
              {"limit", s.limit}});
}

Snapshot QuotaCounter::snapshot_locked() const {
  const QuotaPeriod period = current_period();
  Snapshot s;
  s.month = period.month;
  s.limit = config_.monthly_limit;
  s.resets_at = period.resets_at;
  s.utc_offset = config_.utc_offset;
  s.unknown_limit = unknown_limit(config_);
  std::uint64_t charged = 0;
  if (auto it = months_.find(period.month); it != months_.end()) {
    const Month& m = it->second;
    // Our spending since the last report is still "leased" in Redis's figures; spending
    // beyond the lease (unlimited quota without Redis) is in neither yet.
    const std::uint64_t unreported = minus(m.ledger.spent, m.reported_spent);
    const std::uint64_t overdraft = minus(m.ledger.spent + m.ledger.returned, m.ledger.granted);
    s.leased = minus(m.leased, minus(unreported, overdraft));
    s.used = minus(m.charged, m.leased) + unreported;
    charged = m.charged + overdraft;
    s.own_lease = m.ledger.left();
    s.unknown_used = m.unknown_used;
    s.unreported = unreported > 0;
  }
  s.mode = mode_for(charged, s.limit, config_.economy_at);
  // The fleet has nothing left to lease, but our own lease still covers some requests.
  if (s.mode == Mode::exhausted && s.own_lease > 0) s.mode = Mode::economy;
  s.mode =
      effective_mode(s.mode, config_.pacing, s.used + s.leased, s.limit, clock_.wall_now(), period);
  return s;
}

Snapshot QuotaCounter::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_locked();
}

void QuotaCounter::set_config(const config::QuotaConfig& config) {
  std::lock_guard lock(mutex_);
  config_ = config;
}

}  // namespace wg::quota
