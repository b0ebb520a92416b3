#include "wg-bench/zipf.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wg::bench {

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ZipfDistribution::ZipfDistribution(std::size_t n, double exponent) {
  if (n == 0) throw std::invalid_argument("zipf: n must be at least 1");
  if (!(exponent >= 0) || !std::isfinite(exponent)) {
    throw std::invalid_argument("zipf: exponent must be a finite number >= 0");
  }
  cdf_.resize(n);
  double total = 0;
  for (std::size_t k = 0; k < n; ++k) {
    total += 1.0 / std::pow(static_cast<double>(k + 1), exponent);
    cdf_[k] = total;
  }
  for (auto& c : cdf_) c /= total;
  cdf_.back() = 1.0;  // no rounding gap at the top
}

double ZipfDistribution::probability(std::size_t rank) const {
  if (rank >= cdf_.size()) return 0;
  return rank == 0 ? cdf_[0] : cdf_[rank] - cdf_[rank - 1];
}

std::size_t ZipfDistribution::sample(double u) const {
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  if (it == cdf_.end()) return cdf_.size() - 1;
  return static_cast<std::size_t>(it - cdf_.begin());
}

}  // namespace wg::bench
