#include "upstream_cost.hpp"

#include <algorithm>
#include <map>

namespace wg::serving {

namespace {

void sort_by_cost(std::vector<WidgetCost>& costs) {
  std::sort(costs.begin(), costs.end(), [](const WidgetCost& a, const WidgetCost& b) {
    return a.calls != b.calls ? a.calls > b.calls : a.widget < b.widget;
  });
}

}  // namespace

UpstreamCost::UpstreamCost(std::size_t capacity) : capacity_(std::max<std::size_t>(1, capacity)) {
  counted_.reserve(capacity_);
}

void UpstreamCost::count(std::string_view widget) {
  auto least = counted_.end();
  for (auto it = counted_.begin(); it != counted_.end(); ++it) {
    if (it->widget == widget) {
      ++it->calls;
      return;
    }
    if (least == counted_.end() || it->calls < least->calls) least = it;
  }
  if (counted_.size() < capacity_) {
    counted_.push_back({std::string(widget), 1, 0});
    return;
  }
  // Full: the newcomer replaces the least counted widget and inherits its count.
  least->widget.assign(widget);
  least->error = least->calls;
  ++least->calls;
}

std::vector<WidgetCost> UpstreamCost::top() const {
  std::vector<WidgetCost> copy = counted_;
  sort_by_cost(copy);
  return copy;
}

std::vector<WidgetCost> merge_top(const std::vector<std::vector<WidgetCost>>& summaries,
                                  std::size_t capacity, std::size_t n) {
  std::map<std::string, WidgetCost, std::less<>> merged;
  for (const auto& summary : summaries) {
    for (const WidgetCost& cost : summary) {
      WidgetCost& into = merged[cost.widget];
      into.widget = cost.widget;
      into.calls += cost.calls;
      into.error += cost.error;
    }
  }
  // A full summary that lacks a widget may have counted it up to its least count before
  // displacing it: `calls` stays an upper bound and `calls - error` a lower one.
  for (const auto& summary : summaries) {
    if (summary.size() < capacity || summary.empty()) continue;
    std::uint64_t least = summary.front().calls;
    for (const WidgetCost& cost : summary) least = std::min(least, cost.calls);
    for (auto& entry : merged) {
      // Not a structured binding: Clang 14 cannot capture one in a lambda.
      const auto& widget = entry.first;
      const bool tracked = std::any_of(summary.begin(), summary.end(),
                                       [&](const WidgetCost& c) { return c.widget == widget; });
      if (!tracked) {
        entry.second.calls += least;
        entry.second.error += least;
      }
    }
  }
  std::vector<WidgetCost> out;
  out.reserve(merged.size());
  for (auto& [widget, cost] : merged) out.push_back(std::move(cost));
  sort_by_cost(out);
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace wg::serving
