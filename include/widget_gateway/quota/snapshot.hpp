#pragma once
// What the quota shows of itself (/admin/quota, /readyz, /metrics), and the pure rules its
// figures follow: the mode a count means, the unknown-id budget's cap.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/quota/mode.hpp"

namespace wg::quota {

// Which mode `charged` of `limit` means; limit 0 is unlimited and always normal.
Mode mode_for(std::uint64_t charged, std::uint64_t limit, double economy_at);

// The cap of the unknown-id budget for `config`: unknown_share of monthly_limit (at least 1
// unless the share is 0); nullopt when the limit is 0 (no cap, still counted).
std::optional<std::uint64_t> unknown_limit(const config::QuotaConfig& config);

struct Snapshot {
  std::string month;         // "YYYY-MM"
  std::uint64_t used = 0;    // requests sent upstream by the fleet (as last seen, plus ours)
  std::uint64_t leased = 0;  // reserved by instances and not yet spent (ours included)
  std::uint64_t limit = 0;
  std::uint64_t own_lease = 0;  // this instance's unspent lease
  std::uint64_t unknown_used = 0;
  std::optional<std::uint64_t> unknown_limit;
  WallTime resets_at{};
  // What the month will end with at the fleet's recent burn rate (burn_rate.hpp); >= used.
  std::uint64_t projected_month_end = 0;
  Mode mode = Mode::normal;
  bool unreported = false;  // some of our spending has not reached Redis yet
  std::chrono::minutes utc_offset{0};
  // What the fleet may still send this month: limit - used - leased (what was sent and what is
  // reserved both count against the limit), 0 once they reach it; none when unlimited (limit 0).
  std::optional<std::uint64_t> remaining() const;
};

}  // namespace wg::quota
