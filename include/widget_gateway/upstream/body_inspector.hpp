#pragma once
// Checks an upstream body before it is cached and pulls out what the cache needs from it.
// Pure functions (no I/O, no shared state); thread-safe. They run only on upstream misses, so
// they favour full validation over speed: a body that is not a complete, valid JSON document
// of the expected shape is rejected whole, and the caller answers 502 instead of caching it.

#include <optional>
#include <string_view>
#include <vector>

#include "widget_gateway/api/widget_summary.hpp"

namespace wg::upstream {

// nullopt unless `body` is one complete, valid JSON object (every byte validated, UTF-8
// included; trailing content rejected) whose counts can be trusted: `totalReviewAmount` is a
// count, `reviewAmount` is an object (possibly empty) whose values are all counts, and
// `sources`, when present, is an array. A count is a non-negative JSON integer; a number with a
// fraction or an exponent is refused even when whole (12.0, 1.2e1: simdjson reads those as
// doubles, and upstream never writes counts that way). Entries of `sources` without a string
// `type` are skipped; other fields are not looked at.
std::optional<api::WidgetSummary> inspect_widget_body(std::string_view body);

// The elements of a reviews body as upstream wrote them.
struct ReviewsSummary {
  // Raw bytes of each array element, views into the inspected `body` (valid as long as it
  // is): no surrounding whitespace or commas, so "[" + join(elements, ",") + "]" reproduces a
  // compact array byte for byte.
  std::vector<std::string_view> elements;
};

// nullopt unless `body` is one complete, valid JSON array whose elements are all objects.
std::optional<ReviewsSummary> inspect_reviews_body(std::string_view body);

}  // namespace wg::upstream
