#pragma once
// The counts a replay of the access log needs from a widget-data answer (accesslog::counts_json),
// made once per entry on the worker that logs it: the body is parsed at the first answer from an
// entry, and the next answers from it reuse the text.
//
// Threads: one worker's. Entries are recognised by their control block (owner comparison): no
// reference count is touched, so logging a hit writes no memory another worker reads.

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "widget_gateway/cache/entry.hpp"

namespace wg::frontend {

class WidgetCounts {
 public:
  // Entries remembered; past it the table starts over (a new day's entries replace the old).
  static constexpr std::size_t kMaxEntries = 4096;

  // The counts of `entry` (widget data with status 200), or "" when its body is not widget data.
  // Valid until the next call.
  std::string_view of(const std::shared_ptr<const cache::Entry>& entry);

 private:
  struct Known {
    std::weak_ptr<const cache::Entry> entry;
    std::string counts;
  };
  std::unordered_map<const cache::Entry*, Known> known_;
};

}  // namespace wg::frontend
