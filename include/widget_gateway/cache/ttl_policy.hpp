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

  // The latest freshness these settings give an answer stored at `stored_at`: for_success with
  // the whole jitter (`status` 200), or for_negative.
  Freshness latest_for(WallTime stored_at, std::uint16_t status) const;

  // An entry read back is held to these settings, whatever settings stored it (before a
  // reload, or on an instance configured otherwise): fresh_until and stale_until become at most
  // latest_for(its stored_at). Nullopt when it is within them already, which every entry these
  // settings made is. So a lowered max_ttl, or a moved refresh_at, applies to what is cached.
  std::optional<Freshness> held_to(const Entry& entry) const;

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
};

}  // namespace wg::cache
