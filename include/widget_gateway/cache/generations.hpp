#pragma once
// Purge generations and soft-purge stamps. Every Redis key of a cache entry carries the
// widget's generation and the global one (KeySpace::entry), so a purge is one INCR: entries
// under the old generations are simply never looked up again and expire by themselves. A soft
// purge instead writes a stamp (the purge time): copies stored before it are read as stale
// from then on and refreshed while they are served (docs/freshness.md). This is the local,
// bounded memory of both as last seen, kept current by the purge channel.
//
// The global (purge-all) generation and stamp live under keys of their own, in slots of their
// own, so no command reads them with a widget's: the process keeps them here and reads them
// only when it does not know them (at start, and after the purge channel dropped, when clear()
// forgot them). A widget's generation and stamp share its slot and are read together.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/key_space.hpp"

namespace wg::cache {

class Generations {
 public:
  explicit Generations(std::size_t max_widgets = 100000) : max_widgets_(max_widgets) {}

  // `escaped_id` as it appears in keys (api::escape_key_id).
  std::optional<std::uint64_t> widget(std::string_view escaped_id) const;
  // Keeps the larger of the known and the given generation (messages may cross lookups).
  void set_widget(std::string_view escaped_id, std::uint64_t generation);

  std::optional<std::uint64_t> global() const;
  void set_global(std::uint64_t generation);

  // Soft-purge stamps; WallTime{} when the widget (or everything) was never soft-purged, nullopt
  // when not known. Setting keeps the later stamp.
  std::optional<WallTime> widget_soft(std::string_view escaped_id) const;
  void set_widget_soft(std::string_view escaped_id, WallTime stamp);
  std::optional<WallTime> global_soft() const;
  void set_global_soft(WallTime stamp);
  // The stamp a copy of the widget is held to: the later of its own and the global one
  // (WallTime{} when neither is known: nothing is held).
  WallTime soft_stamp(std::string_view escaped_id) const;

  // Forgets everything (after a Redis outage, when purges may have been missed).
  void clear();

 private:
  struct Widget {
    std::optional<std::uint64_t> generation;
    std::optional<std::int64_t> soft_ms;
  };
  Widget& record(std::string_view escaped_id);  // under mutex_

  std::size_t max_widgets_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Widget> widgets_;
  std::atomic<std::int64_t> global_{-1};       // -1 = not known
  std::atomic<std::int64_t> global_soft_{-1};  // ms; -1 = not known
};

}  // namespace wg::cache
