#pragma once
// What the gateway knows of a widget from its data body (the spec's Widget object): the API's
// own vocabulary, produced by upstream::inspect_widget_body and read by the cache's page
// derivation, so neither has to reach into the other for it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wg::api {

struct WidgetSummary {
  std::uint64_t total_review_amount = 0;
  std::vector<std::pair<std::string, std::uint64_t>> review_amount;  // platform code -> count
  std::vector<std::string> source_types;  // `type` of each entry in `sources`, in order
  // The counts agree with each other: reviewAmount adds up to totalReviewAmount, and the
  // stars in reviewStars (when they are all counts) to no more than it. Data that contradicts
  // itself is never a proof of an empty page (docs/freshness.md).
  bool consistent = true;
};

}  // namespace wg::api
