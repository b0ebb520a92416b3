#include "widget_gateway/api/keys.hpp"

#include <charconv>

// Header only: the logical key head is named where every key is named; api links no cache code.
#include "widget_gateway/common/key_space.hpp"

namespace wg::api {
namespace {

constexpr char kHexUpper[] = "0123456789ABCDEF";

bool is_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

void append_pct(std::string& out, char c) {
  auto u = static_cast<unsigned char>(c);
  out.push_back('%');
  out.push_back(kHexUpper[u >> 4]);
  out.push_back(kHexUpper[u & 0xF]);
}

void append_path_segment(std::string& out, std::string_view id) {
  bool dot_segment = id == "." || id == "..";
  for (char c : id) {
    bool unreserved = is_alnum(c) || c == '-' || c == '_' || c == '~' || (c == '.' && !dot_segment);
    if (unreserved) {
      out.push_back(c);
    } else {
      append_pct(out, c);
    }
  }
}

bool key_safe(char c) {
  return is_alnum(c) || c == '_' || c == '-';
}

// Ids are nearly always made only of safe characters: copy runs of them at once.
void append_escaped_id(std::string& out, std::string_view id) {
  while (!id.empty()) {
    std::size_t run = 0;
    while (run < id.size() && key_safe(id[run])) ++run;
    out.append(id.data(), run);
    if (run == id.size()) break;
    append_pct(out, id[run]);
    id.remove_prefix(run + 1);
  }
}

void append_widget_key_prefix(std::string& out, std::string_view id) {
  out += kLogicalWidgetHead;
  append_escaped_id(out, id);
  out += "}:";
}

template <class Number>
void append_number(std::string& out, Number value) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

}  // namespace

std::string escape_key_id(std::string_view widget_id) {
  std::string out;
  out.reserve(widget_id.size());
  append_escaped_id(out, widget_id);
  return out;
}

std::string widget_key_prefix(std::string_view widget_id) {
  std::string out;
  out.reserve(widget_id.size() + 6);
  append_widget_key_prefix(out, widget_id);
  return out;
}

std::string cache_key(const ApiRequest& request) {
  // Built in one buffer sized for the longest form: the hit path computes a key per request.
  std::string out;
  out.reserve(request.widget_id.size() + 48);
  append_widget_key_prefix(out, request.widget_id);
  if (request.endpoint == Endpoint::widget) {
    out += 'w';
    return out;
  }
  out += "r:";
  out += request.query.type ? to_string(*request.query.type) : std::string_view("*");
  out += ':';
  append_number(out, request.query.limit);
  out += ':';
  append_number(out, request.query.skip);
  return out;
}

std::string upstream_target(const ApiRequest& request) {
  std::string out = "/api/v1/widgets/widget/";
  append_path_segment(out, request.widget_id);
  if (request.endpoint == Endpoint::widget) {
    out += "/remote";
    return out;
  }
  out += "/reviews/remote?limit=";
  out += std::to_string(request.query.limit);
  out += "&skip=";
  out += std::to_string(request.query.skip);
  if (request.query.type) {
    out += "&type=";
    out += to_string(*request.query.type);
  }
  return out;
}

}  // namespace wg::api
