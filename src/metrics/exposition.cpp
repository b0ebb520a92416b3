#include "metrics/exposition.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace wg::metrics::exposition {

namespace {

bool name_char(char c, bool first, bool colon_allowed) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (c == ':') return colon_allowed;
  return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool colon_allowed) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon_allowed)) return false;
  }
  return true;
}

}  // namespace

bool valid_metric_name(std::string_view name) {
  return valid_name(name, true);
}

bool valid_label_name(std::string_view name) {
  return valid_name(name, false) && !name.starts_with("__");
}

void append_help(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out.push_back(c);
    }
  }
}

void append_label_value(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out.push_back(c);
    }
  }
}

std::string label_text(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    if (!out.empty()) out.push_back(',');
    out += name;
    out += "=\"";
    append_label_value(out, value);
    out.push_back('"');
  }
  return out;
}

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    out.append(buf, ec == std::errc{} ? end : buf);
  }
}

void append_value(std::string& out, std::uint64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, ec == std::errc{} ? end : buf);
}

}  // namespace wg::metrics::exposition
