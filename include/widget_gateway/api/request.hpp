#pragma once
// A validated API request: what the cache key and the upstream target are built from.

#include <cstdint>
#include <optional>
#include <string>

#include "widget_gateway/api/platform.hpp"

namespace wg::api {

enum class Endpoint : std::uint8_t { widget, reviews };

struct ReviewsQuery {
  std::uint32_t limit = 0;  // 1..300 once validated
  std::uint64_t skip = 0;   // 0..1000000000 once validated
  std::optional<Platform> type;
  friend bool operator==(const ReviewsQuery&, const ReviewsQuery&) = default;
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::widget;
  std::string widget_id;  // percent-decoded
  ReviewsQuery query;     // all defaults for Endpoint::widget
  friend bool operator==(const ApiRequest&, const ApiRequest&) = default;
};

}  // namespace wg::api
