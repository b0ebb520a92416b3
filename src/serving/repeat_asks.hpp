#pragma once
// Which of the entries recently asked for something were asked for it before: the last kSlots
// entries asked, in a ring of weak pointers (it keeps none alive). One worker's; no lock.

#include <array>
#include <cstddef>
#include <memory>

#include "widget_gateway/cache/entry.hpp"

namespace wg::serving {

class RepeatAsks {
 public:
  // True when `entry` was asked before (and is still among the last kSlots); else remembers it.
  bool asked_before(const std::shared_ptr<const cache::Entry>& entry) {
    for (const auto& slot : ring_) {
      // Same control block: a weak pointer keeps it, so its address is never another entry's.
      if (!slot.owner_before(entry) && !entry.owner_before(slot) && !slot.expired()) return true;
    }
    ring_[next_] = entry;
    next_ = (next_ + 1) % kSlots;
    return false;
  }

 private:
  static constexpr std::size_t kSlots = 64;
  std::array<std::weak_ptr<const cache::Entry>, kSlots> ring_;
  std::size_t next_ = 0;
};

}  // namespace wg::serving
