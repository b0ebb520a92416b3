#pragma once
// How long a cached answer stays fresh. Upstream refreshes its data once a day (at
// cache.refresh_at in cache.utc_offset), so a success stays fresh until shortly after the next
// refresh, within [min_ttl, max_ttl]. Fixed offsets only: no DST.

#include <chrono>
#include <cstdint>
#include <optional>

#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::cache {

struct Freshness {
  WallTime fresh_until;
  WallTime stale_until;
  friend bool operator==(const Freshness&, const Freshness&) = default;
};

// Returns B + lag for the smallest B (a daily occurrence of `at` in `utc_offset`) with
// B + lag > now: the moment data fetched now is expected to be outdated. Exactly at B + lag,
// the next day's boundary is returned.
WallTime next_refresh_boundary(WallTime now, config::TimeOfDay at, std::chrono::minutes utc_offset,
                               config::Duration lag);

class TtlPolicy {
 public:
  explicit TtlPolicy(const config::CacheConfig& config);

  // fresh_until = min(B + lag + jitter * random01, now + max_ttl), at least now + min_ttl;
  // stale_until = fresh_until + max(stale_while_revalidate, stale_if_error).
  // random01 is clamped into [0, 1].
  Freshness for_success(WallTime now, double random01) const;

  // A cached unknown widget: fresh for negative_ttl, no stale window.
  Freshness for_negative(WallTime now) const;

  // A copy carrying a hold that began at `since` (docs/freshness.md): fresh until
  // since + confirm_after, when its confirmation fetch is due, then the stale window.
  Freshness for_hold(WallTime since) const;
  std::chrono::milliseconds confirm_after() const { return confirm_after_; }

  // The latest freshness these settings give `entry`: for_hold when it carries a hold, else
  // for_success with the whole jitter (status 200) or for_negative, from its stored_at.
  Freshness latest_for(const Entry& entry) const;

  // An entry read back is held to these settings, whatever settings stored it (before a
  // reload, or on an instance configured otherwise): fresh_until and stale_until become at most
  // latest_for(it). Nullopt when it is within them already, which every entry these settings
  // made is. So a lowered max_ttl, or a moved refresh_at, applies to what is cached.
  std::optional<Freshness> held_to(const Entry& entry) const;

  // The moment from which a success stored at `stored_at` and fresh until `fresh_until` is
  // refreshed early (XFetch, Vattani et al.: fresh_until - fetch_time * -ln(draw), `draw` in
  // (0, 1] drawn once per stored copy, so every reader agrees), but never before the start of
  // the freshness period `fresh_until` ends in: a refresh before it would be a second call in
  // the period the copy was stored in, for data that changes only at the next boundary.
  // fresh_until itself means never (a refresh is due then anyway).
  WallTime early_refresh_at(WallTime stored_at, WallTime fresh_until,
                            std::chrono::milliseconds fetch_time, double draw) const;

  friend bool operator==(const TtlPolicy&, const TtlPolicy&) = default;

  // The freshness period `now` lies in: the day between two refresh boundaries, cut into
  // segments of max_ttl from its start (the last one shorter). A success stored within a
  // period stays fresh at least until the period ends, so each key is fetched at most once
  // per period (purges and evictions aside): what the per-widget guard counts in.
  struct Period {
    WallTime start;
    WallTime end;
    friend bool operator==(const Period&, const Period&) = default;
  };
  Period period_of(WallTime now) const;

 private:
  config::TimeOfDay refresh_at_;
  std::chrono::minutes utc_offset_;
  config::Duration refresh_lag_;
  config::Duration min_ttl_;
  config::Duration max_ttl_;
  config::Duration jitter_;
  config::Duration stale_window_;
  config::Duration negative_ttl_;
  config::Duration confirm_after_;
};

}  // namespace wg::cache
