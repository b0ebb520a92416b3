// The only translation unit that includes toml++ (it is heavy): turns a TOML document into
// calls on the key table.
#include <toml++/toml.h>

#include <algorithm>

#include "config/keys.hpp"
#include "widget_gateway/config/loader.hpp"

namespace wg::config {
namespace {

// "FILE:LINE:COLUMN".
std::string place(std::string_view origin, const toml::source_region& source) {
  std::string out(origin.empty() ? "config" : origin);
  out += ':' + std::to_string(source.begin.line) + ':' + std::to_string(source.begin.column);
  return out;
}

std::string where(std::string_view origin, const toml::source_region& source) {
  return " (" + place(origin, source) + ")";
}

// toml++ quotes what it could not read ("'123...' is not representable in 64 bits"). On a line
// that mentions the admin token, that could be the token itself (written without quotes, say):
// the quoted text is left out there; the place still says where to look.
std::string describe(const toml::parse_error& e, std::string_view text) {
  std::string description(e.description());
  std::size_t line_start = 0;
  for (auto line = e.source().begin.line; line > 1 && line_start != std::string_view::npos;
       --line) {
    line_start = text.find('\n', line_start);
    if (line_start != std::string_view::npos) ++line_start;
  }
  if (line_start == std::string_view::npos) return description;
  const std::string_view line = text.substr(line_start, text.find('\n', line_start) - line_start);
  const std::size_t open = description.find('\'');
  const std::size_t close = description.rfind('\'');
  if (line.find("token") != std::string_view::npos && open != std::string::npos && close > open) {
    description.replace(open + 1, close - open - 1, "...");
  }
  return description;
}

detail::Value to_value(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return std::string(node.as_string()->get());
    case toml::node_type::integer:
      return node.as_integer()->get();
    case toml::node_type::floating_point:
      return node.as_floating_point()->get();
    case toml::node_type::boolean:
      return node.as_boolean()->get();
    case toml::node_type::array: {
      std::vector<std::string> items;
      for (const auto& element : *node.as_array()) {
        const auto* text = element.as_string();
        if (!text) return detail::OtherValue{"an array with non-string elements"};
        items.push_back(text->get());
      }
      return items;
    }
    case toml::node_type::table:
      return detail::OtherValue{"a table"};
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return detail::OtherValue{"a date/time"};
    case toml::node_type::none:
      break;
  }
  return detail::OtherValue{"an unsupported value"};
}

}  // namespace

Config parse_toml(std::string_view text, std::string_view origin, Config base,
                  std::vector<KeyPosition>* positions) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw ConfigError(describe(e, text) + where(origin, e.source()));
  }
  bool min_ttl_set = false;
  bool jitter_set = false;
  std::vector<std::pair<toml::source_position, KeyPosition>> placed;  // toml++ sorts by name
  for (const auto& [section_key, section_node] : root) {
    std::string section(section_key.str());
    if (!detail::is_section(section)) {
      throw ConfigError(section + ": unknown section [" + section + "]" +
                        where(origin, section_node.source()));
    }
    const auto* table = section_node.as_table();
    if (!table) {
      throw ConfigError(section + ": expected a [" + section + "] table" +
                        where(origin, section_node.source()));
    }
    for (const auto& [name_key, node] : *table) {
      std::string key = section + "." + std::string(name_key.str());
      const detail::KeySpec* spec = detail::find_key(section, name_key.str());
      if (!spec) {
        throw ConfigError(detail::unknown_key_message(section, name_key.str()) +
                          where(origin, node.source()));
      }
      try {
        spec->from_value(base, to_value(node), key);
      } catch (const ConfigError& e) {
        throw ConfigError(e.what() + where(origin, node.source()));
      }
      if (key == "cache.min_ttl") min_ttl_set = true;
      if (key == "cache.jitter") jitter_set = true;
      if (positions) placed.push_back({node.source().begin, {key, place(origin, node.source())}});
    }
  }
  if (positions) {
    std::sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) {
      return std::pair(a.first.line, a.first.column) < std::pair(b.first.line, b.first.column);
    });
    for (auto& [source, position] : placed) positions->push_back(std::move(position));
  }
  // A file that lowers max_ttl alone below the min_ttl or jitter it did not set (the defaults
  // 1m and 5m) means "keep entries at most this long": they follow the ceiling down.
  if (!min_ttl_set && base.cache.min_ttl > base.cache.max_ttl) {
    base.cache.min_ttl = base.cache.max_ttl;
  }
  if (!jitter_set && base.cache.jitter > base.cache.max_ttl) {
    base.cache.jitter = base.cache.max_ttl;
  }
  return base;
}

}  // namespace wg::config
