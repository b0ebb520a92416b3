#pragma once
// Normalized forms of a validated request: the cache key and the upstream target. Both depend
// only on the ApiRequest, so parameter order, defaults and ignored parameters never matter
// (?limit=20 ≡ ?skip=0&limit=20&utm=x).

#include <optional>
#include <string>
#include <string_view>

#include "widget_gateway/api/request.hpp"

namespace wg::api {

// "wg:{<id>}:w" for widget data, "wg:{<id>}:r:<type|*>:<limit>:<skip>" for reviews.
// The braces are a Redis Cluster hash tag, so every key of one widget lives in one slot. Id
// bytes outside [A-Za-z0-9_-] are written as %XX (upper-case hex; '%' itself included), which
// keeps the mapping injective and the tag unbreakable whatever the id holds.
std::string cache_key(const ApiRequest& request);
// The same into `out` (replaced, its buffer reused: the hit path builds a key per request).
void cache_key_into(const ApiRequest& request, std::string& out);

// The request a key was built from (cache_key's inverse): nullopt for anything cache_key does
// not make, so a key read back from Redis (the prefetch's demand) is never trusted blindly.
std::optional<ApiRequest> request_of_key(std::string_view key);

// "wg:{<id>}:", the prefix every key of that widget starts with (for purges).
std::string widget_key_prefix(std::string_view widget_id);

// The escaped id as it appears inside the braces.
std::string escape_key_id(std::string_view widget_id);

// "/api/v1/widgets/widget/<id>/remote" or
// "/api/v1/widgets/widget/<id>/reviews/remote?limit=L&skip=S[&type=T]", the id percent-encoded
// outside RFC 3986 unreserved characters (and "." / ".." fully encoded, so that no dot-segment
// can be formed). skip is always written, so one request has one upstream form.
std::string upstream_target(const ApiRequest& request);

}  // namespace wg::api
