#pragma once
// Structured events (state changes, errors, start-up) as one JSON object per line on stderr.
// Events are rare by design; the per-request access log is a separate, buffered sink.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace wg::log {

enum class Level { debug, info, warn, error };

std::string_view to_string(Level level);
bool parse_level(std::string_view text, Level& out);

void set_level(Level level);
bool enabled(Level level);

// One key/value of an event. Strings are escaped when written.
class Field {
 public:
  enum class Kind { string, integer, unsigned_integer, number, boolean, strings };
  Field(std::string_view key, std::string_view value) : key_(key), kind_(Kind::string), s_(value) {}
  Field(std::string_view key, const char* value) : Field(key, std::string_view(value)) {}
  Field(std::string_view key, const std::string& value) : Field(key, std::string_view(value)) {}
  Field(std::string_view key, bool value) : key_(key), kind_(Kind::boolean), b_(value) {}
  Field(std::string_view key, int value) : key_(key), kind_(Kind::integer), i_(value) {}
  Field(std::string_view key, long value) : key_(key), kind_(Kind::integer), i_(value) {}
  Field(std::string_view key, long long value) : key_(key), kind_(Kind::integer), i_(value) {}
  Field(std::string_view key, unsigned value) : key_(key), kind_(Kind::unsigned_integer), u_(value) {}
  Field(std::string_view key, unsigned long value)
      : key_(key), kind_(Kind::unsigned_integer), u_(value) {}
  Field(std::string_view key, unsigned long long value)
      : key_(key), kind_(Kind::unsigned_integer), u_(value) {}
  Field(std::string_view key, double value) : key_(key), kind_(Kind::number), d_(value) {}
  // A JSON array of strings; `values` must outlive the field (it does within one event call).
  Field(std::string_view key, const std::vector<std::string>& values)
      : key_(key), kind_(Kind::strings), list_(&values) {}

  void append_to(std::string& out) const;

 private:
  std::string_view key_;
  Kind kind_;
  std::string_view s_;
  union {
    bool b_;
    std::int64_t i_;
    std::uint64_t u_;
    double d_;
    const std::vector<std::string>* list_;
  };
};

void event(Level level, std::string_view name, std::initializer_list<Field> fields = {});

inline void debug(std::string_view name, std::initializer_list<Field> fields = {}) {
  if (enabled(Level::debug)) event(Level::debug, name, fields);
}
inline void info(std::string_view name, std::initializer_list<Field> fields = {}) {
  if (enabled(Level::info)) event(Level::info, name, fields);
}
inline void warn(std::string_view name, std::initializer_list<Field> fields = {}) {
  if (enabled(Level::warn)) event(Level::warn, name, fields);
}
inline void error(std::string_view name, std::initializer_list<Field> fields = {}) {
  if (enabled(Level::error)) event(Level::error, name, fields);
}

}  // namespace wg::log
