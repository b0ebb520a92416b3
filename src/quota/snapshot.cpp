#include "widget_gateway/quota/snapshot.hpp"

#include <algorithm>

namespace wg::quota {

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

std::optional<std::uint64_t> Snapshot::remaining() const {
  if (limit == 0) return std::nullopt;
  return limit > used + leased ? limit - used - leased : 0;
}

}  // namespace wg::quota
