#pragma once
// Latency histogram in the HDR style: log-linear buckets over the whole uint64 range with a
// bounded relative error, constant-time recording, percentile queries and merging. Values
// below 2^SubBucketBits are kept exactly; above that each power-of-two range is split into
// 2^(SubBucketBits-1) equal buckets, so a reported value is at most 2^-(SubBucketBits-1) above
// the true one: 1/128 (0.8 %) for the run's Histogram, 1/16 (6 %) for the per-second
// CoarseHistogram of the time series, which trades precision for 8x less memory per second.
// The bench records nanoseconds.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wg::bench {

template <unsigned SubBucketBits>
class BasicHistogram {
 public:
  static constexpr unsigned kSubBucketBits = SubBucketBits;
  static constexpr std::uint64_t kHalf = std::uint64_t{1} << (kSubBucketBits - 1);
  static constexpr std::size_t kBucketCount = (66 - kSubBucketBits) * kHalf;

  BasicHistogram() : counts_(kBucketCount, 0) {}

  void record(std::uint64_t value, std::uint64_t count = 1);
  template <unsigned OtherBits>
  void merge(const BasicHistogram<OtherBits>& other);
  void reset();

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ == 0 ? 0 : min_; }
  std::uint64_t max() const { return max_; }
  double mean() const;
  double stddev() const;  // from the bucket midpoints

  // The value at quantile q in [0, 1]: the smallest bucket whose cumulative count reaches
  // ceil(q * count), reported as that bucket's highest value, clamped to [min, max]. So p100 is
  // the exact maximum and q = 0 the exact minimum. 0 when empty.
  std::uint64_t value_at(double q) const;

  // Buckets in value order, for exports; a count of 0 means the bucket is empty.
  std::uint64_t count_at(std::size_t index) const { return counts_[index]; }

  // Bucket geometry, public for tests.
  static std::size_t bucket_index(std::uint64_t value);
  static std::uint64_t bucket_lowest(std::size_t index);
  static std::uint64_t bucket_highest(std::size_t index);

 private:
  template <unsigned>
  friend class BasicHistogram;

  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  long double sum_ = 0;
};

using Histogram = BasicHistogram<8>;
using CoarseHistogram = BasicHistogram<5>;

// Merging a finer histogram into a coarser one (or the same) re-buckets each bucket's values
// at its lowest value; the other way round is not offered.
template <unsigned Bits>
template <unsigned OtherBits>
void BasicHistogram<Bits>::merge(const BasicHistogram<OtherBits>& other) {
  static_assert(OtherBits >= Bits, "merge a finer or equal histogram only");
  if (other.count_ == 0) return;
  if constexpr (OtherBits == Bits) {
    for (std::size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
  } else {
    for (std::size_t i = 0; i < BasicHistogram<OtherBits>::kBucketCount; ++i) {
      if (other.counts_[i] != 0) {
        counts_[bucket_index(BasicHistogram<OtherBits>::bucket_lowest(i))] += other.counts_[i];
      }
    }
  }
  count_ += other.count_;
  if (other.min_ < min_) min_ = other.min_;
  if (other.max_ > max_) max_ = other.max_;
  sum_ += other.sum_;
}

extern template class BasicHistogram<8>;
extern template class BasicHistogram<5>;

}  // namespace wg::bench
