#pragma once
// Purge generations. Every Redis key of a widget carries the widget's generation and the
// global one ("wg:{id}:g<global>.<widget>:..."), so a purge is one INCR: entries under the old
// generations are simply never looked up again and expire by themselves. This is the local,
// bounded memory of the generations last seen, kept current by the purge channel.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

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

// Redis keys of the generation counters.
std::string widget_generation_key(std::string_view escaped_id);  // "wg:{id}:gen"
inline constexpr std::string_view kGlobalGenerationKey = "wg:gen";
// The pub/sub channel on which purges are announced to every instance.
inline constexpr std::string_view kPurgeChannel = "wg:purge";

// Splits a logical cache key "wg:{id}:rest" into the escaped id and the rest; nullopt when the
// key does not have that shape.
struct KeyParts {
  std::string_view escaped_id;
  std::string_view rest;
};
std::optional<KeyParts> split_key(std::string_view logical_key);
// "wg:{id}:g<global>.<widget>:rest"
std::string physical_key(const KeyParts& parts, std::uint64_t global, std::uint64_t widget);

}  // namespace wg::cache
