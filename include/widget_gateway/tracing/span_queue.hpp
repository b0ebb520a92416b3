#pragma once
// Finished spans waiting for the exporter: one queue per io worker, bounded. A worker pushes
// (a short critical section, contended only while the exporter drains that worker's queue);
// a full queue drops the span and counts it. The exporter drains from its own thread.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "widget_gateway/tracing/span.hpp"

namespace wg::tracing {

class SpanQueue {
 public:
  explicit SpanQueue(std::size_t capacity) : capacity_(capacity) {}

  // Thread-safe. False (and counted in dropped()) when the queue holds `capacity` spans.
  bool push(SpanData span);
  // Thread-safe. Moves up to `max` of the oldest spans to the end of `out`.
  void drain(std::vector<SpanData>& out, std::size_t max);

  std::size_t capacity() const { return capacity_; }
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  const std::size_t capacity_;
  std::mutex mutex_;
  std::vector<SpanData> spans_;
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace wg::tracing
