#include "widget_gateway/quota/burn_history.hpp"

#include <algorithm>

namespace wg::quota {

namespace {

using Days = std::chrono::duration<std::int64_t, std::ratio<86400>>;

// Days since the epoch in the offset.
std::int64_t local_day(WallTime t, std::chrono::minutes utc_offset) {
  return std::chrono::floor<Days>(t + utc_offset).time_since_epoch().count();
}

WallTime local_day_start(std::int64_t day, std::chrono::minutes utc_offset) {
  return WallTime{std::chrono::duration_cast<WallTime::duration>(Days{day})} - utc_offset;
}

}  // namespace

std::optional<std::uint64_t> daily_bound(std::uint64_t used, std::uint64_t limit,
                                         WallTime day_start, const QuotaPeriod& period) {
  if (limit == 0) return std::nullopt;
  if (used >= limit) return 0;
  const auto left = std::chrono::ceil<Days>(period.resets_at - day_start).count();
  const std::uint64_t days = static_cast<std::uint64_t>(std::max<std::int64_t>(1, left));
  return (limit - used + days - 1) / days;
}

BurnHistory::BurnHistory(std::size_t max_samples, std::chrono::seconds interval)
    : max_samples_(std::max<std::size_t>(4, max_samples)),
      interval_(std::max(interval, std::chrono::seconds(1))) {
  kept_.reserve(max_samples_);
}

void BurnHistory::record(WallTime now, const QuotaPeriod& period, std::chrono::minutes utc_offset,
                         std::uint64_t used, std::uint64_t limit) {
  if (period.month != month_) {
    month_ = period.month;
    kept_.clear();
    latest_.reset();
    day_start_.reset();
  }
  const UsedSample sample{now, used};
  latest_ = sample;

  const std::int64_t day = local_day(now, utc_offset);
  if (!day_start_ || day != day_) {
    day_ = day;
    day_start_ = sample;
    // Started mid-day, the count starts now, but the bound is still the whole day's share.
    day_bound_ = daily_bound(used, limit, local_day_start(day, utc_offset), period);
  }

  if (!kept_.empty() && now - kept_.back().at < interval_) return;
  if (kept_.size() == max_samples_) {
    // Keep the first, third, fifth...: the span stays, the resolution halves.
    std::size_t out = 0;
    for (std::size_t i = 0; i < kept_.size(); i += 2) kept_[out++] = kept_[i];
    kept_.resize(out);
    interval_ *= 2;
    if (now - kept_.back().at < interval_) return;
  }
  kept_.push_back(sample);
}

std::vector<UsedSample> BurnHistory::samples() const {
  std::vector<UsedSample> out = kept_;
  if (latest_ && (out.empty() || out.back().at != latest_->at)) out.push_back(*latest_);
  return out;
}

std::optional<DayCount> BurnHistory::today() const {
  if (!day_start_ || !latest_) return std::nullopt;
  const std::uint64_t calls =
      latest_->used > day_start_->used ? latest_->used - day_start_->used : 0;
  return DayCount{day_start_->at, calls, day_bound_};
}

}  // namespace wg::quota
