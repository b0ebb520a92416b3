#pragma once
// The bench's randomness: a small seeded generator and a Zipf distribution over ranks. Both are
// deterministic for a seed, so a scenario and a seed always produce the same request sequence.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wg::bench {

// SplitMix64: tiny state, good enough statistical quality for picking requests, and cheap.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, 1).
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // True with probability p.
  bool chance(double p) { return uniform01() < p; }

 private:
  std::uint64_t state_;
};

// P(rank k) proportional to 1 / (k + 1)^exponent for k in [0, n). The CDF is computed once
// (n doubles); a draw is a binary search. exponent 0 is the uniform distribution.
class ZipfDistribution {
 public:
  ZipfDistribution(std::size_t n, double exponent);
  std::size_t size() const { return cdf_.size(); }
  double probability(std::size_t rank) const;
  // Maps u in [0, 1) to a rank.
  std::size_t sample(double u) const;
  std::size_t sample(Rng& rng) const { return sample(rng.uniform01()); }

 private:
  std::vector<double> cdf_;
};

}  // namespace wg::bench
