#include "widget_gateway/api/keys.hpp"

#include <charconv>

#include "id_chars.hpp"

#include "widget_gateway/api/percent.hpp"
#include "widget_gateway/api/validate.hpp"
#include "widget_gateway/api/widget_policy.hpp"

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
  return is_id_char(c);
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
std::optional<Number> parse_number(std::string_view text) {
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
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
  std::string out;
  cache_key_into(request, out);
  return out;
}

void cache_key_into(const ApiRequest& request, std::string& out) {
  // Built in one buffer sized for the longest form.
  out.clear();
  out.reserve(request.widget_id.size() + 48);
  append_widget_key_prefix(out, request.widget_id);
  if (request.endpoint == Endpoint::widget) {
    out += 'w';
    return;
  }
  out += "r:";
  out += request.query.type ? to_string(*request.query.type) : std::string_view("*");
  out += ':';
  append_number(out, request.query.limit);
  out += ':';
  append_number(out, request.query.skip);
}

std::optional<ApiRequest> request_of_key(std::string_view key) {
  const std::optional<KeyParts> parts = split_key(key);
  if (!parts || parts->escaped_id.empty()) return std::nullopt;
  // Any decoding is checked by building the key again below: only escape_key_id's form passes.
  std::optional<std::string> id = percent_decode(parts->escaped_id);
  if (!id || id->size() > kMaxWidgetIdBytes) return std::nullopt;
  ApiRequest request;
  request.widget_id = std::move(*id);
  std::string_view rest = parts->rest;
  if (rest == "w") {
    request.endpoint = Endpoint::widget;
  } else if (rest.starts_with("r:")) {
    request.endpoint = Endpoint::reviews;
    rest.remove_prefix(2);
    const auto first = rest.find(':');
    const auto second = first == std::string_view::npos ? first : rest.find(':', first + 1);
    if (second == std::string_view::npos) return std::nullopt;
    const std::string_view type = rest.substr(0, first);
    if (type != "*") {
      request.query.type = parse_platform(type);
      if (!request.query.type) return std::nullopt;
    }
    const auto limit = parse_number<std::uint32_t>(rest.substr(first + 1, second - first - 1));
    const auto skip = parse_number<std::uint64_t>(rest.substr(second + 1));
    // Within what validation lets through: a key no valid request makes is not one.
    if (!limit || !skip || *limit < 1 || *limit > kMaxLimit || *skip > kMaxSkip) {
      return std::nullopt;
    }
    request.query.limit = *limit;
    request.query.skip = *skip;
  } else {
    return std::nullopt;
  }
  if (cache_key(request) != key) return std::nullopt;  // one key, one request: nothing else
  return request;
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
