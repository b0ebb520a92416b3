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

}  // namespace wg::metrics
