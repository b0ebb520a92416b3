#include "widget_gateway/quota/quota_counter.hpp"

#include "quota_scripts.hpp"

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
// A request whose new lease other requests spent first asks this many times in all.
constexpr int kLeaseAttempts = 8;
// A lease nobody spent from for this long goes back to the fleet.
constexpr std::chrono::minutes kIdleReturn{5};
// While the fleet is known to be out of quota, a request is refused without asking Redis
// again for this long.
constexpr std::chrono::seconds kExhaustedRecheck{1};

// Months back from the newest deletable one whose keys a sweep deletes: a fleet that was
// stopped for less than a year leaves nothing behind.
constexpr int kMonthsSwept = 12;

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
  bool restored = false;              // the counter was counted again, and went up
  std::optional<std::uint64_t> held;  // what it held before (nothing: it was missing)
  bool granted = false;               // this run reserved something
};

QuotaCounter::QuotaCounter(Clock& clock, const config::QuotaConfig& config, std::string instance,
                           KeySpace keys)
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

bool QuotaCounter::unreported_locked(const Month& month) {
  return month.reported_spent != month.ledger.spent || month.reported_unsent != month.ledger.unsent;
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
  Ledger sent;
  {
    std::lock_guard lock(mutex_);
    Month& month = month_locked(period);
    // Given back here, before the script runs: what is on its way back is never spent.
    month.ledger.returned += std::min(give_back, month.ledger.left());
    sent = month.ledger;
    args = {"EVAL",
            std::string(scripts::kLeaseScript),
            "3",
            quota_key(period, keys_),
            leases_key(period, keys_),
            unknown_key(period, keys_),
            instance_,
            std::to_string(sent.spent),
            std::to_string(sent.unsent),
            std::to_string(sent.returned),
            std::to_string(sent.granted),
            std::to_string(want),
            std::to_string(config_.monthly_limit),
            std::to_string(month.others_sent + sent.sent())};
  }
  auto [ec, reply] = co_await redis.command(std::move(args));
  if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 10) {
    if (!ec && reply.type == redis::Reply::Type::error) {
      log::warn("quota_redis_error", {{"reply", reply.str}});
    }
    co_return std::nullopt;
  }
  const auto& e = reply.elements;
  Reply out;
  out.ledger = {non_negative(e[0].integer), non_negative(e[1].integer), non_negative(e[3].integer),
                non_negative(e[2].integer)};
  out.charged = non_negative(e[4].integer);
  out.leased = non_negative(e[5].integer);
  out.lost = e[6].integer != 0;
  out.unknown_used = non_negative(e[7].integer);
  out.restored = e[8].integer != 0;
  if (e[9].integer >= 0) out.held = non_negative(e[9].integer);
  out.granted = out.ledger.granted > sent.granted;
  if (out.restored) {
    // Redis lost the month's counter (deleted, evicted, a restart without persistence).
    log::warn("quota_counter_restored",
              {{"month", period.month},
               {"held", out.held ? std::to_string(*out.held) : std::string("missing")},
               {"charged", out.charged},
               {"leased", out.leased}});
  }
  std::optional<ModeChange> change;
  {
    std::lock_guard lock(mutex_);
    adopt_locked(month_locked(period), out, sent);
    change = note_mode_locked();
  }
  log_mode_change(change);
  co_return out;
}

void QuotaCounter::adopt_locked(Month& month, const Reply& reply, const Ledger& sent) {
  // Replies may arrive out of order (each worker has its own connection): grants only grow,
  // unless Redis lost what this request knew. Then the rebuilt grant is adopted, if no other
  // reply has changed the grant since the request left: several scripts sent before the loss
  // was known all say `lost`, and the one that ran first knows the least.
  if (reply.lost && sent.granted == month.ledger.granted) {
    log::warn("quota_ledger_rebuilt",
              {{"month", month.period.month},
               {"known_granted", month.ledger.granted},
               {"granted", reply.ledger.granted},
               {"what",
                "Redis no longer had this instance's quota ledger (a restart without "
                "persistence, a failover that lost writes, or a FLUSH); the count was "
                "rebuilt from what the instances report"},
               {"check",
                "Redis persistence (appendonly yes, appendfsync everysec) and "
                "maxmemory-policy (noeviction or volatile-*); /admin/quota used"}});
    month.ledger.granted = reply.ledger.granted;
  } else {
    month.ledger.granted = std::max(month.ledger.granted, reply.ledger.granted);
  }
  // What Redis holds for this instance is at least what it sent, and more when this process
  // knew less than it had spent: the month went away and came back (a clock stepped back across
  // the 1st, a quota.utc_offset reloaded there and back) before its ledger here could be kept.
  // Counted there means spent: it is never spent again.
  month.ledger.spent = std::max(month.ledger.spent, reply.ledger.spent);
  month.ledger.unsent = std::max(month.ledger.unsent, reply.ledger.unsent);
  month.ledger.returned = std::max(month.ledger.returned, reply.ledger.returned);
  month.reported_spent = std::max({month.reported_spent, sent.spent, reply.ledger.spent});
  month.reported_unsent = std::max({month.reported_unsent, sent.unsent, reply.ledger.unsent});
  month.charged = reply.charged;
  month.leased = reply.leased;
  month.unknown_used = reply.unknown_used;
  const std::uint64_t fleet_sent = minus(reply.charged, reply.leased);
  month.others_sent = std::max(month.others_sent, minus(fleet_sent, reply.ledger.sent()));
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

  // Spent here, once this request is running again, not as the reply is adopted: a request
  // whose coroutine ends meanwhile (a stop) must not leave a unit spent and never sent. Other
  // workers' requests may take the new lease first (the lock is not held across the wait);
  // Redis granted it, so the month has room: ask again, a few times.
  for (int attempt = 0; attempt < kLeaseAttempts; ++attempt) {
    std::optional<Reply> reply = co_await exchange(redis, grant.period, 0, want);
    {
      std::lock_guard lock(mutex_);
      Month& month = month_locked(grant.period);
      if (month.ledger.left() > 0 || config_.monthly_limit == 0) {
        // Unlimited: spent even beyond the lease (Redis away); the next report counts it.
        note_spend_locked(month);
        grant.verdict = Verdict::allowed;
      } else if (reply && reply->granted && attempt + 1 < kLeaseAttempts) {
        want = lease_size_locked(month);
        continue;
      } else {
        grant.verdict = reply ? Verdict::exhausted : Verdict::unavailable;
        if (reply) month.refused_at = clock_.steady_now();
      }
      change = note_mode_locked();
    }
    break;
  }
  log_mode_change(change);
  co_return grant;
}

void QuotaCounter::give_back(const Grant& grant) {
  if (!grant.allowed()) return;
  std::optional<ModeChange> change;
  {
    std::lock_guard lock(mutex_);
    // A month already settled and forgotten keeps the charge: counted high, the safe side.
    auto it = months_.find(grant.period.month);
    if (it == months_.end() || it->second.ledger.sent() == 0) return;
    ++it->second.ledger.unsent;
    change = note_mode_locked();
  }
  log_mode_change(change);
}

asio::awaitable<QuotaCounter::Grant> QuotaCounter::acquire_unknown(redis::Client& redis) {
  Grant grant;
  std::optional<std::uint64_t> cap;
  {
    std::lock_guard lock(mutex_);
    grant.period = current_period();
    cap = unknown_limit(config_);
  }
  std::vector<std::string> args{"EVAL", std::string(scripts::kUnknownScript), "1",
                                unknown_key(grant.period, keys_),
                                cap ? std::to_string(*cap) : std::string("-1")};
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
  std::vector<std::string> args{"EVAL", std::string(scripts::kRefundScript), "1",
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
  std::vector<std::string> dropped;
  std::string current_month;
  {
    std::lock_guard lock(mutex_);
    const WallTime wall = clock_.wall_now();
    const QuotaPeriod current = current_period();
    current_month = current.month;
    month_locked(current);  // the fleet's figures of this month are refreshed even unspent
    const SteadyTime now = clock_.steady_now();
    // Too late to report a month a week past its reset: its keys are about to be deleted, and
    // a report would bring them back for good.
    std::erase_if(months_, [&](const auto& item) {
      if (item.first == current.month || wall < quota_reports_until(item.second.period)) {
        return false;
      }
      dropped.push_back(item.first);
      return true;
    });
    for (auto& [name, month] : months_) {
      const bool past = name != current.month;
      const bool idle = month.ledger.left() > 0 && now - month.last_spend >= kIdleReturn;
      const std::uint64_t give_back = past || idle ? month.ledger.left() : 0;
      if (!past || give_back > 0 || unreported_locked(month)) {
        due.push_back({month.period, give_back});
      }
    }
  }
  for (const std::string& month : dropped) log::warn("quota_month_dropped", {{"month", month}});
  bool fleet_heard = false;  // Redis answered for the current month: `used` is the fleet's
  for (const Due& d : due) {
    auto reply = co_await exchange(redis, d.period, d.give_back, 0);
    if (reply && d.period.month == current_month) fleet_heard = true;
  }
  co_await delete_past_months(redis);
  std::lock_guard lock(mutex_);
  const std::string current = current_period().month;
  // Only the fleet's count, as Redis just reported it, feeds the burn rate: before Redis first
  // answers, `used` is this instance's own count, and the fleet's arriving later would look
  // like a burst.
  if (fleet_heard && current == current_month) {
    burn_.observe(current, snapshot_locked().used, clock_.steady_now());
  }
  // A past month's ledger stays until it can no longer be reported (above), spent out or not:
  // the month may come back (a clock stepped back, a utc_offset reloaded), and what it held must
  // not be forgotten and spent again.
}

std::string QuotaCounter::months_deleted_through() const {
  std::lock_guard lock(mutex_);
  return deleted_through_;
}

asio::awaitable<void> QuotaCounter::delete_past_months(redis::Client& redis) {
  QuotaPeriod newest;
  std::chrono::minutes offset;
  {
    std::lock_guard lock(mutex_);
    offset = config_.utc_offset;
    newest = newest_deletable_period(clock_.wall_now(), offset);
    if (deleted_through_ == newest.month) co_return;
  }
  // One DEL per month: a month's keys share its hash tag (one slot in a cluster).
  long long deleted = 0;
  QuotaPeriod period = newest;
  for (int i = 0; i < kMonthsSwept; ++i, period = previous_period(period, offset)) {
    std::vector<std::string> args{"DEL", quota_key(period, keys_), leases_key(period, keys_),
                                  unknown_key(period, keys_)};
    auto [ec, reply] = co_await redis.command(std::move(args));
    if (ec || reply.type != redis::Reply::Type::integer) co_return;  // again at the next report
    deleted += reply.integer;
  }
  if (deleted > 0) {
    log::info("quota_months_deleted", {{"through", newest.month}, {"keys", deleted}});
  }
  std::lock_guard lock(mutex_);
  deleted_through_ = newest.month;
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
    if (month.ledger.left() > 0 || unreported_locked(month)) settled = false;
  }
  co_return settled;
}

LeaseState QuotaCounter::lease_state() const {
  std::lock_guard lock(mutex_);
  LeaseState state{instance_, {}, {}};
  for (const auto& [name, month] : months_) {
    const std::uint64_t seen = month.others_sent + month.ledger.sent();
    if (month.ledger == Ledger{} && seen == 0) continue;
    state.ledgers[name] = month.ledger;
    if (seen > 0) state.seen[name] = seen;
  }
  return state;
}

void QuotaCounter::restore(const LeaseState& state) {
  std::lock_guard lock(mutex_);
  instance_ = state.instance;
  const WallTime wall = clock_.wall_now();
  const QuotaPeriod current = current_period();
  for (const auto& [name, ledger] : state.ledgers) {
    std::optional<QuotaPeriod> period = name == current.month
                                            ? std::optional<QuotaPeriod>(current)
                                            : period_of_month(name, config_.utc_offset);
    if (!period || wall >= quota_reports_until(*period)) continue;
    Month& month = month_locked(*period);
    month.ledger = ledger;
    month.last_spend = clock_.steady_now();  // not idle: it may still be spent from
    if (auto seen = state.seen.find(name); seen != state.seen.end()) {
      month.others_sent = minus(seen->second, ledger.sent());
    }
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
    // beyond the lease (unlimited quota without Redis) is in neither yet. (A charge given back
    // after Redis heard of it stays counted there until the next report.)
    const std::uint64_t unreported =
        minus(m.ledger.sent(), minus(m.reported_spent, m.reported_unsent));
    const std::uint64_t overdraft = minus(m.ledger.sent() + m.ledger.returned, m.ledger.granted);
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
  s.projected_month_end =
      projected_month_end(s.used, burn_.per_second(clock_.steady_now()), clock_.wall_now(), period);
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
