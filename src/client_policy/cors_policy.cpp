#include "widget_gateway/client_policy/cors_policy.hpp"

#include <algorithm>
#include <array>

#include "header_tokens.hpp"

namespace wg::client_policy {

namespace {

using detail::ascii_lower;

constexpr std::string_view kExposeHeaders = "ETag, Age, Cache-Status";
constexpr std::string_view kAllowMethods = "GET, HEAD";
constexpr std::string_view kPreflightVary =
    "Access-Control-Request-Method, Access-Control-Request-Headers";

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool valid_scheme(std::string_view s) {
  if (s.empty() || !is_alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
  });
}

// reg-name limited to what a browser serializes (IDNs arrive as punycode), or an IP literal.
bool valid_host(std::string_view h) {
  if (h.empty()) return false;
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    return std::all_of(h.begin() + 1, h.end() - 1, [](char c) {
      return is_digit(c) || (ascii_lower(c) >= 'a' && ascii_lower(c) <= 'f') || c == ':' ||
             c == '.';
    });
  }
  return std::all_of(h.begin(), h.end(), [](char c) {
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
  });
}

}  // namespace

std::optional<std::string> CorsPolicy::normalize_origin(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos) return std::nullopt;
  std::string_view scheme = text.substr(0, sep);
  std::string_view authority = text.substr(sep + 3);
  if (!valid_scheme(scheme)) return std::nullopt;

  std::string_view host = authority;
  std::string_view port;
  auto colon = authority.rfind(':');
  auto bracket = authority.rfind(']');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), is_digit))
      return std::nullopt;
    unsigned value = 0;
    for (char c : port) value = value * 10 + static_cast<unsigned>(c - '0');
    if (value == 0 || value > 65535) return std::nullopt;
    while (port.size() > 1 && port.front() == '0') port.remove_prefix(1);
  }
  if (!valid_host(host)) return std::nullopt;

  std::string out = detail::to_lower(scheme);
  bool default_port = (out == "http" && port == "80") || (out == "https" && port == "443");
  out.append("://").append(detail::to_lower(host));
  if (!port.empty() && !default_port) out.append(":").append(port);
  return out;
}

CorsPolicy::CorsPolicy(std::vector<std::string> allowed_origins, CorsOptions options)
    : max_age_(std::to_string(options.max_age.count())),
      timing_allow_origin_(options.timing_allow_origin) {
  for (const auto& name : options.allowed_headers) {
    allowed_headers_.push_back(detail::to_lower(detail::trim_ows(name)));
  }
  for (auto& entry : allowed_origins) {
    if (entry == "*") {
      any_ = true;
    } else if (auto normalized = normalize_origin(entry)) {
      allowed_.push_back(std::move(*normalized));
    } else {
      allowed_.push_back(std::move(entry));
    }
  }
  if (any_) allowed_.clear();
}

bool CorsPolicy::allows(std::string_view origin) const {
  if (any_) return true;
  if (origin.empty() || allowed_.empty()) return false;
  auto normalized = normalize_origin(origin);
  std::string_view key = normalized ? std::string_view(*normalized) : origin;
  return std::find(allowed_.begin(), allowed_.end(), key) != allowed_.end();
}

void CorsPolicy::add_response_headers(std::string_view origin, http::Fields& fields) const {
  if (!allows(origin)) return;
  // The echoed value passed normalize_origin or equals a configured literal, so it cannot carry
  // CR/LF into the header block.
  const std::string_view allowed = any_ ? std::string_view("*") : origin;
  fields.add("Access-Control-Allow-Origin", allowed);
  fields.add("Access-Control-Expose-Headers", kExposeHeaders);
  if (timing_allow_origin_) fields.add("Timing-Allow-Origin", allowed);
}

void CorsPolicy::add_preflight_headers(std::string_view origin, std::string_view request_method,
                                       std::string_view request_headers,
                                       http::Fields& fields) const {
  if (!enabled()) return;
  request_method = detail::trim_ows(request_method);
  if (request_method.empty()) {  // a plain OPTIONS request, not a preflight
    if (vary_on_origin()) fields.add("Vary", "Origin");
    add_response_headers(origin, fields);
    return;
  }
  if (vary_on_origin()) {
    fields.start("Vary").append("Origin, ").append(kPreflightVary);
  } else {
    fields.add("Vary", kPreflightVary);
  }
  if (!allows(origin)) return;
  // Methods are case-sensitive (RFC 9110 §9.1); browsers upper-case GET and HEAD themselves.
  if (request_method != "GET" && request_method != "HEAD") return;

  // Only allowed names are echoed (lower-cased, from our own list): nothing the client sent
  // reaches the header block unchecked.
  std::string allowed_headers;
  detail::for_each_list_element(request_headers, [&](std::string_view name) {
    const std::string lower = detail::to_lower(name);
    auto it = std::find(allowed_headers_.begin(), allowed_headers_.end(), lower);
    if (it == allowed_headers_.end()) return;
    if (!allowed_headers.empty()) allowed_headers.append(", ");
    allowed_headers.append(*it);
  });

  fields.add("Access-Control-Allow-Origin", any_ ? std::string_view("*") : origin);
  fields.add("Access-Control-Allow-Methods", kAllowMethods);
  if (!allowed_headers.empty()) {
    fields.add("Access-Control-Allow-Headers", allowed_headers);
  }
  fields.add("Access-Control-Max-Age", max_age_);
}

}  // namespace wg::client_policy
