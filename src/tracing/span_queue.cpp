#include "widget_gateway/tracing/span_queue.hpp"

#include <algorithm>
#include <iterator>

namespace wg::tracing {

bool SpanQueue::push(SpanData span) {
  {
    std::lock_guard lock(mutex_);
    if (spans_.size() < capacity_) {
      spans_.push_back(std::move(span));
      return true;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void SpanQueue::drain(std::vector<SpanData>& out, std::size_t max) {
  std::lock_guard lock(mutex_);
  const std::size_t n = std::min(max, spans_.size());
  if (n == 0) return;
  std::move(spans_.begin(), spans_.begin() + static_cast<std::ptrdiff_t>(n),
            std::back_inserter(out));
  spans_.erase(spans_.begin(), spans_.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace wg::tracing
