#pragma once
// Purge generations. Every Redis key of a cache entry carries the widget's generation and the
// global one (KeySpace::entry), so a purge is one INCR: entries under the old generations are
// simply never looked up again and expire by themselves. This is the local, bounded memory of
// the generations last seen, kept current by the purge channel.
//
// The global (purge-all) generation lives under a key of its own, in a slot of its own, so no
// command reads it with a widget's: the process keeps it here and reads it only when it does
// not know it (at start, and after the purge channel dropped, when clear() forgot it).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "widget_gateway/cache/key_space.hpp"

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

  // Forgets everything (after a Redis outage, when purges may have been missed).
  void clear();

 private:
  std::size_t max_widgets_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::uint64_t> widgets_;
  std::atomic<std::int64_t> global_{-1};  // -1 = not known
};

}  // namespace wg::cache
