#include "widget_gateway/cache/ttl_policy.hpp"

#include <algorithm>

#include "widget_gateway/cache/early_refresh.hpp"

namespace wg::cache {

WallTime next_refresh_boundary(WallTime now, config::TimeOfDay at, std::chrono::minutes utc_offset,
                               config::Duration lag) {
  using namespace std::chrono;
  // B must be strictly after `now - lag`. Work in local time (a fixed offset: no DST), where
  // the refresh happens at `at` every day.
  const auto threshold_local = (now - lag) + utc_offset;
  const sys_days day = floor<days>(threshold_local);
  const auto time_of_day = hours(at.hour) + minutes(at.minute);
  auto boundary_local = WallTime(day) + time_of_day;
  if (boundary_local <= threshold_local) boundary_local += days(1);
  return boundary_local - utc_offset + lag;
}

TtlPolicy::TtlPolicy(const config::CacheConfig& config)
    : refresh_at_(config.refresh_at),
      utc_offset_(config.utc_offset),
      refresh_lag_(config.refresh_lag),
      min_ttl_(config.min_ttl),
      max_ttl_(config.max_ttl),
      jitter_(config.jitter),
      stale_window_(std::max(config.stale_while_revalidate, config.stale_if_error)),
      negative_ttl_(config.negative_ttl),
      confirm_after_(config.confirm_after) {}

Freshness TtlPolicy::for_success(WallTime now, double random01) const {
  using namespace std::chrono;
  // Jitter spreads the expiry of keys filled in the same second, so they are not all
  // refetched at once right after upstream's refresh.
  const double share = std::clamp(random01, 0.0, 1.0);
  const auto jitter = duration_cast<milliseconds>(
      duration<double, std::milli>(static_cast<double>(jitter_.count()) * share));
  WallTime fresh = next_refresh_boundary(now, refresh_at_, utc_offset_, refresh_lag_) + jitter;
  fresh = std::min(fresh, now + max_ttl_);
  fresh = std::max(fresh, now + min_ttl_);
  return {fresh, fresh + stale_window_};
}

TtlPolicy::Period TtlPolicy::period_of(WallTime now) const {
  const WallTime day_end = next_refresh_boundary(now, refresh_at_, utc_offset_, refresh_lag_);
  const WallTime day_start = day_end - std::chrono::days(1);
  const auto segment = std::max<config::Duration>(max_ttl_, std::chrono::seconds(1));
  const auto index = (now - day_start) / segment;
  const WallTime start = day_start + index * segment;
  return {start, std::min(day_end, start + segment)};
}

Freshness TtlPolicy::for_negative(WallTime now) const {
  WallTime fresh = now + negative_ttl_;
  return {fresh, fresh};
}

Freshness TtlPolicy::for_hold(WallTime since) const {
  const WallTime fresh = since + confirm_after_;
  return {fresh, fresh + stale_window_};
}

Freshness TtlPolicy::latest_for(const Entry& entry) const {
  if (entry.hold) return for_hold(entry.hold->since);
  return entry.status == 200 ? for_success(entry.stored_at, 1.0) : for_negative(entry.stored_at);
}

WallTime TtlPolicy::early_refresh_at(WallTime stored_at, WallTime fresh_until,
                                     std::chrono::milliseconds fetch_time, double draw) const {
  using namespace std::chrono;
  if (fresh_until <= stored_at) return fresh_until;
  const Period last = period_of(fresh_until - milliseconds(1));
  if (last.start <= stored_at) return fresh_until;  // fresh_until ends the period it was stored in
  const WallTime head = fresh_until - early_head_start(fresh_until - stored_at, fetch_time, draw);
  return std::max(head, last.start);
}

std::optional<Freshness> TtlPolicy::held_to(const Entry& entry) const {
  const Freshness latest = latest_for(entry);
  if (entry.fresh_until <= latest.fresh_until && entry.stale_until <= latest.stale_until) {
    return std::nullopt;
  }
  return Freshness{std::min(entry.fresh_until, latest.fresh_until),
                   std::min(entry.stale_until, latest.stale_until)};
}

}  // namespace wg::cache
