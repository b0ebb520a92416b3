#include "widget_gateway/metrics/instruments.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wg::metrics {

void claim_shard(std::size_t worker) noexcept {
  if (worker < detail::kSharedShard) {
    detail::this_thread_shard = {worker, true};
  } else {
    detail::this_thread_shard = {detail::kSharedShard, false};
  }
}

std::uint64_t Counter::value() const noexcept {
  std::uint64_t total = 0;
  for (const Cell& cell : cells_) total += cell.value.load(std::memory_order_relaxed);
  return total;
}

namespace {

std::vector<double> checked_bounds(std::vector<double> bounds) {
  if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      throw std::invalid_argument("histogram bucket bounds must be finite");
    }
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      throw std::invalid_argument("histogram bucket bounds must be strictly increasing");
    }
  }
  return bounds;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(checked_bounds(std::move(upper_bounds))),
      // One slot per bound plus the +Inf bucket.
      lines_per_shard_((bounds_.size() + 1 + kSlotsPerLine - 1) / kSlotsPerLine),
      lines_(new Line[lines_per_shard_ * detail::kShards]()),
      sums_(new Sum[detail::kShards]()) {}

void Histogram::observe(double seconds) noexcept {
  if (std::isnan(seconds)) return;
  const auto index = static_cast<std::size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
  const detail::ThreadShard shard = detail::this_thread_shard;
  detail::add_to(bucket(shard.index, index), std::uint64_t{1}, shard.exclusive);
  detail::add_to(sums_[shard.index].value, seconds, shard.exclusive);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  s.cumulative_counts.assign(bounds_.size() + 1, 0);
  for (std::size_t shard = 0; shard < detail::kShards; ++shard) {
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
      s.cumulative_counts[i] += bucket(shard, i).load(std::memory_order_relaxed);
    }
    s.sum += sums_[shard].value.load(std::memory_order_relaxed);
  }
  for (std::size_t i = 1; i < s.cumulative_counts.size(); ++i) {
    s.cumulative_counts[i] += s.cumulative_counts[i - 1];
  }
  s.count = s.cumulative_counts.back();
  return s;
}

void OldestSeen::observe(std::int64_t seen_s, std::int64_t now_s) noexcept {
  if (seen_s < 0 || now_s < 0) return;
  // Window numbers start at 1, so that a slot never written (0) matches none.
  const std::uint64_t window = static_cast<std::uint64_t>(now_s / kWindowSeconds) + 1;
  const std::uint64_t packed =
      (window << kTimeBits) | (static_cast<std::uint64_t>(seen_s) & kTimeMask);
  const detail::ThreadShard shard = detail::this_thread_shard;
  std::atomic<std::uint64_t>& slot = cells_[shard.index].slots[window & 1];
  std::uint64_t current = slot.load(std::memory_order_relaxed);
  if (shard.exclusive) {
    if ((current >> kTimeBits) != window || (current & kTimeMask) > (packed & kTimeMask)) {
      slot.store(packed, std::memory_order_relaxed);
    }
    return;
  }
  while (((current >> kTimeBits) != window || (current & kTimeMask) > (packed & kTimeMask)) &&
         !slot.compare_exchange_weak(current, packed, std::memory_order_relaxed)) {
  }
}

std::optional<std::int64_t> OldestSeen::oldest(std::int64_t now_s) const noexcept {
  if (now_s < 0) return std::nullopt;
  const std::uint64_t window = static_cast<std::uint64_t>(now_s / kWindowSeconds) + 1;
  std::optional<std::int64_t> oldest;
  for (const Cell& cell : cells_) {
    for (const auto& slot : cell.slots) {
      const std::uint64_t value = slot.load(std::memory_order_relaxed);
      const std::uint64_t at = value >> kTimeBits;
      if (at != window && at + 1 != window) continue;  // older than the last minute, or unset
      const auto seen = static_cast<std::int64_t>(value & kTimeMask);
      if (!oldest || seen < *oldest) oldest = seen;
    }
  }
  return oldest;
}

}  // namespace wg::metrics
