#pragma once
// Randomness is injected like time: TTL jitter and early refresh draw from a RandomSource so
// tests can pin the draws.

#include <atomic>
#include <cstdint>
#include <random>

namespace wg {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // A uniformly distributed number in [0, 1). Thread-safe.
  virtual double uniform01() = 0;
};

class DefaultRandom final : public RandomSource {
 public:
  double uniform01() override {
    thread_local std::mt19937_64 engine{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
  }
  static DefaultRandom& instance() {
    static DefaultRandom random;
    return random;
  }
};

// Always returns the same value; for tests.
class FixedRandom final : public RandomSource {
 public:
  explicit FixedRandom(double value) : value_(value) {}
  double uniform01() override { return value_.load(); }
  void set(double value) { value_.store(value); }

 private:
  std::atomic<double> value_;
};

}  // namespace wg
