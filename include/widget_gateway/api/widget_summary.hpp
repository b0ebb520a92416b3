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
};

}  // namespace wg::api
