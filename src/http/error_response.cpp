#include "widget_gateway/http/error_response.hpp"

namespace wg::http {

Response error_response(api::ErrorCode code, api::Endpoint endpoint, std::string_view message,
                        std::string_view cache_control) {
  Response response;
  response.status = api::error_info(code, endpoint).status;
  response.add_header("Content-Type", "application/json");
  response.add_header("Cache-Control", cache_control);
  switch (code) {
    case api::ErrorCode::unauthorized:
      response.add_header("WWW-Authenticate", "Bearer");
      break;
    case api::ErrorCode::payload_too_large:
    case api::ErrorCode::uri_too_long:
    case api::ErrorCode::headers_too_large:
      response.close = true;  // the rest of the request is unread: the stream is out of sync
      break;
    default:
      break;
  }
  response.set_body(api::error_body(code, endpoint, message));
  return response;
}

}  // namespace wg::http
