#include "widget_gateway/api/errors.hpp"

#include "widget_gateway/common/json_writer.hpp"

namespace wg::api {

ErrorInfo error_info(ErrorCode code, Endpoint endpoint) {
  switch (code) {
    case ErrorCode::limit_missing:
      return {400, "limit_missing", "limit is required"};
    case ErrorCode::limit_invalid:
      return {400, "limit_invalid", "limit must be an integer from 1 to 300"};
    case ErrorCode::limit_too_large:
      return {400, "limit_too_large", "limit must be at most 300"};
    case ErrorCode::skip_invalid:
      return {400, "skip_invalid", "skip must be an integer from 0 to 1000000000"};
    case ErrorCode::type_invalid:
      return {400, "type_invalid",
              "type must be one of doubleGis, yaSprav, avito, zoon, vkontakte, prodoctorov, "
              "otzovik, googleMap, yaBusiness"};
    case ErrorCode::param_duplicate:
      return {400, "param_duplicate", "limit, skip and type may each be given only once"};
    case ErrorCode::bad_request:
      return {400, "bad_request", "malformed request"};
    case ErrorCode::widget_not_found:
      return {endpoint == Endpoint::widget ? 404u : 400u, "widget_not_found", "widget not found"};
    case ErrorCode::not_found:
      return {404, "not_found", "not found"};
    case ErrorCode::unauthorized:
      return {401, "unauthorized", "a valid bearer token is required"};
    case ErrorCode::method_not_allowed:
      return {405, "method_not_allowed", "method not allowed"};
    case ErrorCode::payload_too_large:
      return {413, "payload_too_large", "request body too large"};
    case ErrorCode::uri_too_long:
      return {414, "uri_too_long", "request target too long"};
    case ErrorCode::headers_too_large:
      return {431, "headers_too_large", "request header fields too large"};
    case ErrorCode::quota_exhausted:
      return {429, "quota_exhausted", "monthly upstream request quota exhausted"};
    case ErrorCode::rate_limited:
      return {429, "rate_limited", "too many requests"};
    case ErrorCode::upstream_error:
      return {502, "upstream_error", "upstream request failed"};
    case ErrorCode::upstream_timeout:
      return {504, "upstream_timeout", "upstream request timed out"};
    case ErrorCode::not_implemented:
      return {501, "not_implemented", "transfer coding not implemented"};
    case ErrorCode::http_version_not_supported:
      return {505, "http_version_not_supported", "HTTP version not supported"};
    case ErrorCode::service_unavailable:
      return {503, "service_unavailable", "service unavailable"};
  }
  // Only reachable with a value outside the enum: a bug, answered as a server-side failure.
  return {502, "upstream_error", "upstream request failed"};
}

std::string error_body(ErrorCode code, Endpoint endpoint, std::string_view message) {
  ErrorInfo info = error_info(code, endpoint);
  std::string out;
  out.reserve(64 + info.code.size() + (message.empty() ? info.message.size() : message.size()));
  out += "{\"error\":{\"status\":";
  out += std::to_string(info.status);
  out += ",\"code\":";
  json::append_string(out, info.code);
  out += ",\"message\":";
  json::append_string(out, message.empty() ? info.message : message);
  out += "}}";
  return out;
}

}  // namespace wg::api
