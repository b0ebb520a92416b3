#pragma once
// Latency histogram in the HDR style: log-linear buckets over the whole uint64 range with a
// bounded relative error, constant-time recording, percentile queries and merging. Values
// below 2^kSubBucketBits are kept exactly; above that each power-of-two range is split into
// 2^(kSubBucketBits-1) equal buckets, so a reported value is at most 1/128 (0.8 %) above the
// true one. The bench records nanoseconds.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wg::bench {

class Histogram {
 public:
  static constexpr unsigned kSubBucketBits = 8;
  static constexpr std::uint64_t kHalf = std::uint64_t{1} << (kSubBucketBits - 1);
  static constexpr std::size_t kBucketCount = (66 - kSubBucketBits) * kHalf;

  Histogram() : counts_(kBucketCount, 0) {}

  void record(std::uint64_t value, std::uint64_t count = 1);
  void merge(const Histogram& other);
  void reset();

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ == 0 ? 0 : min_; }
  std::uint64_t max() const { return max_; }
  double mean() const;

  // The value at quantile q in [0, 1]: the smallest bucket whose cumulative count reaches
  // ceil(q * count), reported as that bucket's highest value, clamped to [min, max]. So p100 is
  // the exact maximum and q = 0 the exact minimum. 0 when empty.
  std::uint64_t value_at(double q) const;

  // Bucket geometry, public for tests.
  static std::size_t bucket_index(std::uint64_t value);
  static std::uint64_t bucket_lowest(std::size_t index);
  static std::uint64_t bucket_highest(std::size_t index);

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace wg::bench
