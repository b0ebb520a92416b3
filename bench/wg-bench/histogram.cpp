#include "wg-bench/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace wg::bench {

template <unsigned B>
std::size_t BasicHistogram<B>::bucket_index(std::uint64_t value) {
  constexpr std::uint64_t kExact = std::uint64_t{1} << kSubBucketBits;
  if (value < kExact) return static_cast<std::size_t>(value);
  const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(value));
  const unsigned shift = msb + 1 - kSubBucketBits;
  const std::uint64_t mantissa = value >> shift;  // in [kHalf, 2 * kHalf)
  return static_cast<std::size_t>(shift * kHalf + mantissa);
}

template <unsigned B>
std::uint64_t BasicHistogram<B>::bucket_lowest(std::size_t index) {
  if (index < 2 * kHalf) return index;
  const std::uint64_t shift = index / kHalf - 1;
  const std::uint64_t mantissa = index - shift * kHalf;
  return mantissa << shift;
}

template <unsigned B>
std::uint64_t BasicHistogram<B>::bucket_highest(std::size_t index) {
  if (index < 2 * kHalf) return index;
  const std::uint64_t shift = index / kHalf - 1;
  return bucket_lowest(index) + ((std::uint64_t{1} << shift) - 1);
}

template <unsigned B>
void BasicHistogram<B>::record(std::uint64_t value, std::uint64_t count) {
  if (count == 0) return;
  counts_[bucket_index(value)] += count;
  count_ += count;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  sum_ += static_cast<long double>(value) * static_cast<long double>(count);
}

template <unsigned B>
void BasicHistogram<B>::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0;
}

template <unsigned B>
double BasicHistogram<B>::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ / static_cast<long double>(count_));
}

template <unsigned B>
std::uint64_t BasicHistogram<B>::value_at(double q) const {
  if (count_ == 0) return 0;
  if (!(q > 0)) return min_;
  if (q >= 1) return max_;
  // The small epsilon keeps q * count from rounding up past an exact integer (0.999 * 1000).
  const double wanted = std::ceil(q * static_cast<double>(count_) - 1e-9);
  const std::uint64_t rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(wanted));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(bucket_highest(i), min_, max_);
  }
  return max_;
}

template <unsigned B>
double BasicHistogram<B>::stddev() const {
  if (count_ == 0) return 0.0;
  const long double mean = sum_ / static_cast<long double>(count_);
  long double squares = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    if (counts_[i] == 0) continue;
    const long double middle =
        (static_cast<long double>(bucket_lowest(i)) + static_cast<long double>(bucket_highest(i))) /
        2;
    squares += (middle - mean) * (middle - mean) * static_cast<long double>(counts_[i]);
  }
  return static_cast<double>(std::sqrt(squares / static_cast<long double>(count_)));
}

template class BasicHistogram<8>;
template class BasicHistogram<5>;

}  // namespace wg::bench
