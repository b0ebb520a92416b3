// Fuzz target: the public listener's request-target handling (routing on the raw target,
// percent-decoding, query rules, widget-id policy) and what is built from an accepted request
// (cache key, upstream target). Input: one request target, as a client could send it.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "fuzz_check.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/api/percent.hpp"
#include "widget_gateway/api/route.hpp"
#include "widget_gateway/api/validate.hpp"
#include "widget_gateway/api/widget_policy.hpp"

namespace {

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void check_accepted(const wg::api::ApiRequest& request, const wg::api::WidgetPolicy& policy) {
  using namespace wg::api;
  WG_FUZZ_CHECK(policy.allows(request.widget_id));
  if (request.endpoint == Endpoint::reviews) {
    WG_FUZZ_CHECK(request.query.limit >= 1 && request.query.limit <= kMaxLimit);
    WG_FUZZ_CHECK(request.query.skip <= kMaxSkip);
  }
  const std::string key = cache_key(request);
  WG_FUZZ_CHECK(key.starts_with(widget_key_prefix(request.widget_id)));

  // What is sent upstream must route and validate back to the very same request: nothing a
  // client sends can make the gateway ask upstream for something else.
  const std::string target = upstream_target(request);
  WG_FUZZ_CHECK(target.starts_with("/api/v1/widgets/widget/"));
  for (char c : target) WG_FUZZ_CHECK(c > ' ' && c < 0x7f && c != '#');
  const RouteMatch again = match_route(target);
  WG_FUZZ_CHECK(again.route ==
                (request.endpoint == Endpoint::widget ? Route::widget : Route::reviews));
  auto revalidated = validate_api_request(again, policy);
  WG_FUZZ_CHECK(std::holds_alternative<ApiRequest>(revalidated));
  WG_FUZZ_CHECK(std::get<ApiRequest>(revalidated) == request);
  WG_FUZZ_CHECK(cache_key(std::get<ApiRequest>(revalidated)) == key);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wg::api;
  static const WidgetPolicy policy;  // the default pattern, no allowlist
  const std::string_view target(reinterpret_cast<const char*>(data), size);

  const auto decoded = percent_decode(target);
  WG_FUZZ_CHECK(decoded.has_value() == percent_encoding_valid(target));
  if (decoded) WG_FUZZ_CHECK(decoded->size() <= target.size());

  const RouteMatch match = match_route(target);
  WG_FUZZ_CHECK(inside(match.raw_widget, target) && inside(match.raw_query, target));
  if (match.route == Route::widget || match.route == Route::reviews) {
    WG_FUZZ_CHECK(!match.raw_widget.empty());
    WG_FUZZ_CHECK(match.raw_widget.find('/') == std::string_view::npos);
    auto result = validate_api_request(match, policy);
    if (const auto* request = std::get_if<ApiRequest>(&result)) {
      WG_FUZZ_CHECK(target_encoding_valid(match));
      check_accepted(*request, policy);
    }
  } else {
    WG_FUZZ_CHECK(match.raw_widget.empty());
    if (match.route == Route::not_found) WG_FUZZ_CHECK(match.raw_query.empty());
  }

  // The query rules alone, on the whole input as a raw query.
  auto query = parse_reviews_query(target);
  if (const auto* parsed = std::get_if<ReviewsQuery>(&query)) {
    WG_FUZZ_CHECK(parsed->limit >= 1 && parsed->limit <= kMaxLimit);
    WG_FUZZ_CHECK(parsed->skip <= kMaxSkip);
  }
  return 0;
}
