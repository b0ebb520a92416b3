#include "error_response.hpp"

#include "widget_gateway/api/route.hpp"

namespace wg::frontend {

namespace {

// The admin listener's methods, over all its routes (GET and HEAD for reading, POST for
// purge and warm): what a 405 that names no route offers.
constexpr std::string_view kAdminMethods = "GET, HEAD, POST";

http::Response json_error(unsigned status, api::ErrorCode code, std::string body,
                          std::string_view cache_control) {
  http::Response response;
  response.status = status;
  response.add_header("Content-Type", "application/json");
  response.add_header("Cache-Control", cache_control);
  if (code == api::ErrorCode::unauthorized) response.add_header("WWW-Authenticate", "Bearer");
  response.set_body(std::move(body));
  return response;
}

}  // namespace

http::Response error_response(api::ErrorCode code, api::Endpoint endpoint, std::string_view message,
                              std::string_view cache_control) {
  return json_error(api::error_info(code, endpoint).status, code,
                    api::error_body(code, endpoint, message), cache_control);
}

http::Response error_response(api::ErrorCode code, std::string_view message) {
  // The catalogue takes an endpoint for widget_not_found's sake alone; for every other code
  // both give the same answer, so the one named here says nothing.
  constexpr api::Endpoint kAny = api::Endpoint::widget;
  return json_error(api::error_info(code, kAny).status, code, api::error_body(code, kAny, message),
                    "no-store");
}

api::Rejection refusal_error(http::Refusal why) {
  using api::ErrorCode;
  using http::Refusal;
  switch (why) {
    case Refusal::malformed:
      return {ErrorCode::bad_request, ""};
    case Refusal::framing_conflict:
      return {ErrorCode::bad_request, "Transfer-Encoding with Content-Length"};
    case Refusal::duplicate_host:
      return {ErrorCode::bad_request, "more than one Host header"};
    case Refusal::missing_host:
      return {ErrorCode::bad_request, "HTTP/1.1 request without a Host header"};
    case Refusal::missing_authority:
      return {ErrorCode::bad_request, "request without :authority or Host"};
    case Refusal::authority_mismatch:
      return {ErrorCode::bad_request, "Host differs from :authority"};
    case Refusal::target_too_long:
      return {ErrorCode::uri_too_long, ""};
    case Refusal::head_too_large:
      return {ErrorCode::headers_too_large, ""};
    case Refusal::body_too_large:
      return {ErrorCode::payload_too_large, ""};
    case Refusal::tunnel:
      return {ErrorCode::method_not_allowed, ""};
    case Refusal::transfer_coding:
      return {ErrorCode::not_implemented, ""};
    case Refusal::version:
      return {ErrorCode::http_version_not_supported, ""};
    case Refusal::overloaded:
      return {ErrorCode::service_unavailable, "too many answers waiting for slow clients; retry"};
    case Refusal::handler_failed:
      break;
  }
  // The catalogue has no code for our own failure: upstream_error with words that say so, as
  // an answer the client treats like any failed fetch.
  return {ErrorCode::upstream_error, "internal error"};
}

http::Response refusal_response(http::Refusal why, Listener listener) {
  const api::Rejection error = refusal_error(why);
  http::Response response = error_response(error.code, error.message);
  if (why == http::Refusal::handler_failed) response.status = 500;
  // Room comes back as soon as slow clients take their answers or are dropped (within
  // server.send_rate_interval).
  if (why == http::Refusal::overloaded) response.add_header("Retry-After", "1");
  if (why == http::Refusal::tunnel) {
    response.add_header("Allow", listener == Listener::admin ? kAdminMethods : api::kApiMethods);
  }
  return response;
}

}  // namespace wg::frontend
