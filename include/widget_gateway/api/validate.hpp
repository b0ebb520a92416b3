#pragma once
// Validation of a request to an API route, after routing and after the method was accepted
// (gateway-contract.md, "Query rules").

#include <optional>
#include <variant>

#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/api/route.hpp"
#include "widget_gateway/api/widget_policy.hpp"

namespace wg::api {

inline constexpr std::uint32_t kMaxLimit = 300;
inline constexpr std::uint64_t kMaxSkip = 1'000'000'000;

// True when the widget segment and the query of a matched target are well percent-encoded.
// For routes that validate nothing else (OPTIONS on an API route, /healthz, /readyz): a
// false here is 400 bad_request.
bool target_encoding_valid(const RouteMatch& match);

// Order of checks:
//  1. malformed percent-encoding in the widget segment or the query → bad_request;
//  2. reviews only: the query rules (see below); the widget endpoint ignores its query;
//  3. the decoded widget id: fails the policy, or is "." / ".." → widget_not_found.
// Query rules: parameters split on '&', name and value on the first '=' (no '=' = empty
// value), both percent-decoded before anything is compared ('+' stays '+'), empty
// parameters ("&&") and unknown names ignored. Decoding comes first, so `limit=%35` is
// limit 5 and `%6Cimit=5` is a limit parameter.
// When several query errors occur, the first of these wins:
//   param_duplicate (any of limit/skip/type repeated, even with equal values)
//   limit_missing, limit_invalid, limit_too_large
//   skip_invalid
//   type_invalid
// `match.route` must be Route::widget or Route::reviews.
std::variant<ApiRequest, Rejection> validate_api_request(const RouteMatch& match,
                                                         const WidgetPolicy& policy);
// The same into `into` (its id's buffer reused: the hit path validates a request each time);
// the rejection, or nullopt when `into` holds the request.
std::optional<Rejection> validate_api_request_into(const RouteMatch& match,
                                                   const WidgetPolicy& policy, ApiRequest& into);

// The query rules alone, on a raw query (the part after '?'), for tests and for the admin
// entry lookup. Returns bad_request for malformed percent-encoding.
std::variant<ReviewsQuery, Rejection> parse_reviews_query(std::string_view raw_query);

}  // namespace wg::api
