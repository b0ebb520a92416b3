#pragma once
// Which widgets cost the most upstream requests: a Space-Saving summary (Metwally et al.)
// of the widget ids sent upstream, in bounded memory whatever the number of distinct ids.
// A widget outside the summary takes the place of the least counted one and inherits its count
// as an over-estimate (`error`): any widget sent upstream more than total/capacity times is
// in the summary, and its count is at most `error` above the truth.
//
// Threads: one per worker, written by the worker's fetcher on its thread only (where a request
// is actually sent, never on a hit). The admin listener asks each worker for a copy of its
// top() on the worker's thread and merges the copies (merge_top) on the control thread.
// Counted since the process started.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wg::serving {

struct WidgetCost {
  std::string widget;
  std::uint64_t calls = 0;  // upstream requests counted for it (an upper bound)
  std::uint64_t error = 0;  // how much of `calls` may belong to others: calls - error is a floor
  friend bool operator==(const WidgetCost&, const WidgetCost&) = default;
};

class UpstreamCost {
 public:
  static constexpr std::size_t kDefaultCapacity = 64;

  explicit UpstreamCost(std::size_t capacity = kDefaultCapacity);

  // One upstream request sent for `widget`.
  void count(std::string_view widget);
  // Every tracked widget, most calls first (ties by id).
  std::vector<WidgetCost> top() const;
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t capacity_;
  // A linear scan: at most `capacity` entries, touched once per upstream request, which costs
  // milliseconds of network time anyway.
  std::vector<WidgetCost> counted_;
};

// The `n` costliest widgets across the summaries of several workers (each of `capacity`):
// counts and errors of the same widget are added, and a full summary that does not track a
// widget adds its least count to both (it may have counted the widget that often before
// displacing it). `calls` stays an upper bound, `calls - error` a lower one.
std::vector<WidgetCost> merge_top(const std::vector<std::vector<WidgetCost>>& summaries,
                                  std::size_t capacity, std::size_t n);

}  // namespace wg::serving
