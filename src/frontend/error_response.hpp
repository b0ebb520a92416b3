#pragma once
// The contract's JSON errors as HTTP answers (gateway-contract.md, "Errors"):
// application/json, Cache-Control: no-store unless the caller names another policy (e.g. for
// widget_not_found), the body from api::error_body; the session adds the exact Content-Length.
// And what each refusal of the HTTP sessions becomes on each listener.

#include <string_view>

#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/http/refusal.hpp"
#include "widget_gateway/http/response.hpp"

namespace wg::frontend {

// An error answered on one of the two API endpoints, whose widget_not_found status differs.
http::Response error_response(api::ErrorCode code, api::Endpoint endpoint,
                              std::string_view message = {},
                              std::string_view cache_control = "no-store");
// An error about no API endpoint: unknown routes, health and admin routes, refusals. Never
// widget_not_found, the one code whose status depends on the endpoint.
http::Response error_response(api::ErrorCode code, std::string_view message = {});

enum class Listener { public_api, admin };

// The contract's error for a refusal: its code and, where the default words would hide the
// reason, its message. handler_failed is answered with status 500 (refusal_response).
api::Rejection refusal_error(http::Refusal why);
// The whole answer to a refusal on `listener`: the error, and for CONNECT (405) the methods
// the listener takes (Allow). The session decides about the connection and HEAD.
http::Response refusal_response(http::Refusal why, Listener listener);

}  // namespace wg::frontend
