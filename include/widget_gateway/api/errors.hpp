#pragma once
// Every error the gateway answers with, and the one mapping from error to HTTP status, `code`
// and default message (gateway-contract.md, "Errors"). Bodies are compact JSON:
//   {"error":{"status":400,"code":"limit_too_large","message":"limit must be at most 300"}}

#include <string>
#include <string_view>

#include "widget_gateway/api/request.hpp"

namespace wg::api {

enum class ErrorCode {
  limit_missing,
  limit_invalid,
  limit_too_large,
  skip_invalid,
  type_invalid,
  param_duplicate,
  bad_request,
  widget_not_found,
  not_found,
  unauthorized,
  method_not_allowed,
  payload_too_large,
  uri_too_long,
  headers_too_large,
  quota_exhausted,
  rate_limited,
  upstream_error,
  upstream_timeout,
  not_implemented,
  http_version_not_supported,
  service_unavailable,
};

inline constexpr std::size_t kErrorCodeCount = 21;

struct ErrorInfo {
  unsigned status;
  std::string_view code;     // the JSON `code`, e.g. "limit_too_large"
  std::string_view message;  // default human message; stable, clients may show it
};

// widget_not_found is 404 on the widget endpoint and 400 on the reviews endpoint, as upstream
// answers; every other code ignores `endpoint`.
ErrorInfo error_info(ErrorCode code, Endpoint endpoint = Endpoint::reviews);

// The exact response body. An empty `message` means the default one; a given message is
// JSON-escaped.
std::string error_body(ErrorCode code, Endpoint endpoint = Endpoint::reviews,
                       std::string_view message = {});

// Why a request is refused before anything else happens. An empty message = the default.
struct Rejection {
  ErrorCode code;
  std::string message;
  friend bool operator==(const Rejection&, const Rejection&) = default;
};

}  // namespace wg::api
