#pragma once
// The contract's JSON errors as HTTP responses: application/json, Cache-Control: no-store
// (unless the caller names another policy, e.g. for widget_not_found), exact Content-Length
// (added by the session).

#include <string_view>

#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/http/response.hpp"

namespace wg::http {

Response error_response(api::ErrorCode code, api::Endpoint endpoint = api::Endpoint::reviews,
                        std::string_view message = {}, std::string_view cache_control = "no-store");

}  // namespace wg::http
