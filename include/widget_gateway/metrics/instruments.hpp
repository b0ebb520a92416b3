#pragma once
// The three kinds of instrument the gateway records into. Counters and histograms keep one
// cache line per shard; reads (value(), snapshot()) add the shards up and are meant for
// scrapes and tests.
//
// An io worker claims a shard of its own (claim_shard): only that thread ever writes it, so
// recording is a relaxed load and store on a line no other core writes: no lock, no atomic
// read-modify-write. Any other thread (the control thread, tests, workers beyond the shards)
// records into the last, shared shard with atomic adds.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace wg::metrics {

namespace detail {

// Shards 0..kShards-2 belong to one claiming thread each; the last is shared.
inline constexpr std::size_t kShards = 32;
inline constexpr std::size_t kSharedShard = kShards - 1;
inline constexpr std::size_t kCacheLine = 64;

struct ThreadShard {
  std::size_t index = kSharedShard;
  bool exclusive = false;  // only this thread writes shard `index`
};
inline thread_local ThreadShard this_thread_shard{};

// Adds to a cell: a plain load and store when this thread owns the shard, an atomic add
// otherwise.
template <typename T>
inline void add_to(std::atomic<T>& cell, T n, bool exclusive) noexcept {
  if (exclusive) {
    cell.store(cell.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  } else {
    cell.fetch_add(n, std::memory_order_relaxed);
  }
}

}  // namespace detail

// Makes the calling thread the only writer of shard `worker` (when there is one for it; a
// worker index past the exclusive shards records into the shared one). Each worker index must
// be claimed by one thread only, before it records anything.
void claim_shard(std::size_t worker) noexcept;

// A monotonically increasing count.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void inc(std::uint64_t n = 1) noexcept {
    const detail::ThreadShard shard = detail::this_thread_shard;
    detail::add_to(cells_[shard.index].value, n, shard.exclusive);
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

// The oldest of the times observed within the last minute (the age of the oldest copy served,
// wg_oldest_served_age_seconds). Each shard keeps two 30-second slots; a slot holds its window's
// number and the oldest time seen in it, packed into one word, so a read never sees one without
// the other. Observing is a load and a compare, and a store only when the time is older or the
// window moved on: on the hit path, with no atomic read-modify-write on a worker's own shard.
class OldestSeen {
 public:
  static constexpr std::int64_t kWindowSeconds = 30;

  OldestSeen() = default;
  OldestSeen(const OldestSeen&) = delete;
  OldestSeen& operator=(const OldestSeen&) = delete;

  // `seen_s` and `now_s`: Unix seconds (non-negative).
  void observe(std::int64_t seen_s, std::int64_t now_s) noexcept;
  // The oldest time observed in the window of `now_s` and the one before (the last 30 to 60
  // seconds); nullopt when none was.
  std::optional<std::int64_t> oldest(std::int64_t now_s) const noexcept;

 private:
  static constexpr unsigned kTimeBits = 36;  // Unix seconds up to year 4147
  static constexpr std::uint64_t kTimeMask = (std::uint64_t{1} << kTimeBits) - 1;
  struct alignas(detail::kCacheLine) Cell {
    std::array<std::atomic<std::uint64_t>, 2> slots{};  // 0: never written
  };
  std::array<Cell, detail::kShards> cells_;
};

}  // namespace wg::metrics
