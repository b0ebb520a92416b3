#pragma once
// The three kinds of instrument the gateway records into. Recording is lock-free and cheap
// enough for the request path: relaxed atomics, and for the hot ones (counters, histograms)
// one cache line per thread shard, so io threads on different cores never write the same line.
// Reads (value(), snapshot()) add the shards up and are meant for scrapes and tests.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace wg::metrics {

namespace detail {

// Threads are spread over this many shards round-robin; with more threads than shards some
// share a shard, which stays correct (the cells are atomic) and merely contends more.
inline constexpr std::size_t kShards = 8;
inline constexpr std::size_t kCacheLine = 64;

std::size_t next_shard() noexcept;

inline std::size_t this_thread_shard() noexcept {
  thread_local const std::size_t shard = next_shard();
  return shard;
}

}  // namespace detail

// A monotonically increasing count.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void inc(std::uint64_t n = 1) noexcept {
    cells_[detail::this_thread_shard()].value.fetch_add(n, std::memory_order_relaxed);
  }
  std::uint64_t value() const noexcept;

 private:
  struct alignas(detail::kCacheLine) Cell {
    std::atomic<std::uint64_t> value{0};
  };
  std::array<Cell, detail::kShards> cells_;
};

// A value that goes up and down. Gauges change on state transitions, not per request, so one
// cell is enough; it still gets a line of its own.
class alignas(detail::kCacheLine) Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void add(double v) noexcept { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations (in seconds) counted into fixed buckets. Buckets are stored per bucket and
// made cumulative only when read, so observe() touches one bucket and the sum.
class Histogram {
 public:
  // `upper_bounds`: finite and strictly increasing; +Inf is implicit (a trailing +Inf is
  // accepted and dropped). Throws std::invalid_argument otherwise.
  explicit Histogram(std::vector<double> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // NaN is ignored; everything else lands in the first bucket whose bound is >= seconds.
  void observe(double seconds) noexcept;

  struct Snapshot {
    std::vector<double> upper_bounds;              // without +Inf
    std::vector<std::uint64_t> cumulative_counts;  // one per bound, then the +Inf bucket
    double sum = 0.0;
    std::uint64_t count = 0;  // equals cumulative_counts.back()
  };
  Snapshot snapshot() const;

  const std::vector<double>& upper_bounds() const noexcept { return bounds_; }

 private:
  static constexpr std::size_t kSlotsPerLine = detail::kCacheLine / sizeof(std::uint64_t);
  struct alignas(detail::kCacheLine) Line {
    std::array<std::atomic<std::uint64_t>, kSlotsPerLine> slots{};
  };
  struct alignas(detail::kCacheLine) Sum {
    std::atomic<double> value{0.0};
  };

  std::atomic<std::uint64_t>& bucket(std::size_t shard, std::size_t index) const noexcept {
    return lines_[shard * lines_per_shard_ + index / kSlotsPerLine].slots[index % kSlotsPerLine];
  }

  std::vector<double> bounds_;
  std::size_t lines_per_shard_;
  std::unique_ptr<Line[]> lines_;  // kShards blocks of lines_per_shard_ lines each
  std::unique_ptr<Sum[]> sums_;    // one per shard
};

}  // namespace wg::metrics
