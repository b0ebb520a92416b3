#pragma once
// CORS for the public API (Fetch standard, "CORS protocol"), from [cors] allowed_origins.
//
// The API is public, read-only and without credentials, so:
//   - Access-Control-Allow-Credentials is never sent, in any mode;
//   - with ["*"] every answer carries `Access-Control-Allow-Origin: *` whatever the request's
//     Origin (also none, also "null"): the contract sends no `Vary: Origin` in that mode, so the
//     answer must not depend on Origin or a shared cache could hand a header-less copy to a
//     browser;
//   - with an allowlist, an allowed Origin is echoed and responses vary on Origin (the caller
//     adds "Origin" to its Vary line when vary_on_origin()); "null" (sandboxed frames, file:)
//     is allowed only when listed literally.
// Origins are compared as RFC 6454 serializations: scheme and host lower-cased, the default port
// (http 80, https 443) dropped. Pure and immutable: safe to share between threads.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "widget_gateway/http/fields.hpp"

namespace wg::client_policy {

struct CorsOptions {
  // Field names a preflight may ask for (compared case-insensitively).
  std::vector<std::string> allowed_headers{
      "Accept",        "Accept-Language",   "Content-Language", "Content-Type",    "Cache-Control",
      "If-None-Match", "If-Modified-Since", "Pragma",           "X-Requested-With"};
  std::chrono::seconds max_age{600};  // Access-Control-Max-Age
  bool timing_allow_origin = false;   // Timing-Allow-Origin on allowed answers
};

class CorsPolicy {
 public:
  // Entries are "*" or origins "scheme://host[:port]" (config validation rejects anything else;
  // an entry that does not parse as an origin is kept as a literal, e.g. "null"). Empty = off.
  explicit CorsPolicy(std::vector<std::string> allowed_origins = {}, CorsOptions options = {});

  bool enabled() const { return any_ || !allowed_.empty(); }
  bool allows_any() const { return any_; }
  // True when an allowlist other than "*" is configured: answers depend on Origin.
  bool vary_on_origin() const { return !any_ && !allowed_.empty(); }

  // Whether a request with this Origin field value (empty = none) gets CORS headers.
  bool allows(std::string_view origin) const;

  // Header fields for an actual GET/HEAD answer (200, 304, and errors too,
  // so that pages can read error codes): Access-Control-Allow-Origin,
  // Access-Control-Expose-Headers: ETag, Age, Cache-Status, and Timing-Allow-Origin when
  // configured. Nothing when not allowed. Does not add Vary: the caller merges "Origin" into its
  // own Vary line (see vary_on_origin()).
  void add_response_headers(std::string_view origin, http::Fields& fields) const;

  // Header fields for an OPTIONS answer. For a preflight (Access-Control-Request-Method present)
  // of an allowed origin asking for GET or HEAD: Allow-Origin, Allow-Methods: GET, HEAD,
  // Allow-Headers (those of the requested headers that are allowed, lower-cased; none at all
  // when none is: the browser then refuses a preflight that asked for any), and Max-Age. A
  // preflight's answer depends on its Origin and request fields: Vary names them (Origin only
  // with an allowlist). An OPTIONS that is not a preflight gets the actual-answer headers.
  void add_preflight_headers(std::string_view origin, std::string_view request_method,
                             std::string_view request_headers, http::Fields& fields) const;

  // "scheme://host[:port]" lower-cased, default port dropped; nullopt when `text` is not a
  // serialized origin (path, userinfo, spaces, bad port...).
  static std::optional<std::string> normalize_origin(std::string_view text);

 private:
  bool any_ = false;
  std::vector<std::string> allowed_;          // normalized, or literal when not an origin
  std::vector<std::string> allowed_headers_;  // lower-cased
  std::string max_age_;                       // seconds, as sent
  bool timing_allow_origin_ = false;
};

}  // namespace wg::client_policy
