#include "widget_gateway/api/keys.hpp"

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

}  // namespace

std::string escape_key_id(std::string_view widget_id) {
  std::string out;
  out.reserve(widget_id.size());
  for (char c : widget_id) {
    if (is_alnum(c) || c == '_' || c == '-') {
      out.push_back(c);
    } else {
      append_pct(out, c);
    }
  }
  return out;
}

std::string widget_key_prefix(std::string_view widget_id) {
  std::string out = "wg:{";
  out += escape_key_id(widget_id);
  out += "}:";
  return out;
}

std::string cache_key(const ApiRequest& request) {
  std::string out = widget_key_prefix(request.widget_id);
  if (request.endpoint == Endpoint::widget) {
    out += 'w';
    return out;
  }
  out += "r:";
  out += request.query.type ? to_string(*request.query.type) : std::string_view("*");
  out += ':';
  out += std::to_string(request.query.limit);
  out += ':';
  out += std::to_string(request.query.skip);
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
