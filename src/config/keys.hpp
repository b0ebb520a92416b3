#pragma once
// The table of config keys: one entry per "section.name", knowing how to set its field from a TOML
// value or from the text of an environment variable or flag, and how to print it back as TOML.
// The file reader, apply_value and to_toml all walk this one table, so a key added here is
// accepted, overridable and printed everywhere at once.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "widget_gateway/config/config.hpp"

namespace wg::config::detail {

// A TOML value the key table understands, with TOML itself kept out of this header.
struct OtherValue {
  std::string description;  // "a table", "a date", "an array of integers", ...
};
using Value =
    std::variant<bool, std::int64_t, double, std::string, std::vector<std::string>, OtherValue>;

struct KeySpec {
  std::string_view section;
  std::string_view name;
  // Both throw ConfigError naming `key` (the full "section.name") when the value does not fit.
  void (*from_value)(Config& config, const Value& value, std::string_view key);
  void (*from_raw)(Config& config, std::string_view raw, std::string_view key);
  std::string (*to_toml)(const Config& config);  // the right-hand side of "name = ..."
};

// Sections in documented order; keys grouped by section in documented order.
std::span<const std::string_view> sections();
std::span<const KeySpec> keys();
bool is_section(std::string_view section);
const KeySpec* find_key(std::string_view section, std::string_view name);

// "section.name: ..." for a key the table does not hold: that it was removed, and why, when an
// earlier version accepted it; that it is unknown otherwise. `section` is empty for a key
// without one.
std::string unknown_key_message(std::string_view section, std::string_view name);

// A TOML basic string literal with quotes, escaping what TOML requires.
std::string toml_string(std::string_view text);

}  // namespace wg::config::detail
