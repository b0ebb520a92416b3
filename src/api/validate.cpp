#include "widget_gateway/api/validate.hpp"

#include "widget_gateway/api/percent.hpp"

namespace wg::api {
namespace {

bool all_ascii_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Parses a string of ASCII digits of any length without overflow: nullopt when the value
// exceeds `max`.
std::optional<std::uint64_t> bounded_value(std::string_view digits, std::uint64_t max) {
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string_view::npos) return 0;
  digits.remove_prefix(first);
  if (digits.size() > 19) return std::nullopt;  // > 10^19 - 1 exceeds any bound used here
  std::uint64_t value = 0;
  for (char c : digits) {
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value > max) return std::nullopt;
  return value;
}

struct RawParam {
  std::optional<std::string> value;  // decoded; set once seen
  unsigned count = 0;
};

Rejection reject(ErrorCode code, std::string message = {}) {
  return {code, std::move(message)};
}

}  // namespace

std::variant<ReviewsQuery, Rejection> parse_reviews_query(std::string_view raw_query) {
  if (!percent_encoding_valid(raw_query)) {
    return reject(ErrorCode::bad_request, "malformed percent-encoding in the request target");
  }
  RawParam limit, skip, type;
  std::string_view rest = raw_query;
  while (true) {
    auto amp = rest.find('&');
    std::string_view param = rest.substr(0, amp);
    if (!param.empty()) {
      auto eq = param.find('=');
      // Validity was checked above, so decoding cannot fail.
      std::string name = *percent_decode(param.substr(0, eq));
      std::string value =
          eq == std::string_view::npos ? std::string() : *percent_decode(param.substr(eq + 1));
      RawParam* slot = name == "limit"  ? &limit
                       : name == "skip" ? &skip
                       : name == "type" ? &type
                                        : nullptr;
      if (slot != nullptr) {
        ++slot->count;
        slot->value = std::move(value);
      }
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }

  // Precedence: duplicates first (the request is ambiguous, so its values mean nothing),
  // then limit, skip, type in that order.
  for (auto [slot, name] : {std::pair{&limit, "limit"}, {&skip, "skip"}, {&type, "type"}}) {
    if (slot->count > 1) {
      return reject(ErrorCode::param_duplicate, std::string(name) + " must be given at most once");
    }
  }

  ReviewsQuery query;
  if (!limit.value) return reject(ErrorCode::limit_missing);
  if (!all_ascii_digits(*limit.value)) return reject(ErrorCode::limit_invalid);
  auto limit_value = bounded_value(*limit.value, kMaxLimit);
  if (!limit_value) return reject(ErrorCode::limit_too_large);
  if (*limit_value == 0) return reject(ErrorCode::limit_invalid);
  query.limit = static_cast<std::uint32_t>(*limit_value);

  if (skip.value) {
    if (!all_ascii_digits(*skip.value)) return reject(ErrorCode::skip_invalid);
    auto skip_value = bounded_value(*skip.value, kMaxSkip);
    if (!skip_value) return reject(ErrorCode::skip_invalid);
    query.skip = *skip_value;
  }

  if (type.value) {
    query.type = parse_platform(*type.value);
    if (!query.type) return reject(ErrorCode::type_invalid);
  }
  return query;
}

bool target_encoding_valid(const RouteMatch& match) {
  return percent_encoding_valid(match.raw_widget) && percent_encoding_valid(match.raw_query);
}

std::variant<ApiRequest, Rejection> validate_api_request(const RouteMatch& match,
                                                         const WidgetPolicy& policy) {
  ApiRequest request;
  if (std::optional<Rejection> rejection = validate_api_request_into(match, policy, request)) {
    return std::move(*rejection);
  }
  return request;
}

std::optional<Rejection> validate_api_request_into(const RouteMatch& match,
                                                   const WidgetPolicy& policy, ApiRequest& into) {
  if (match.route != Route::widget && match.route != Route::reviews) {
    return reject(ErrorCode::not_found);
  }
  if (!target_encoding_valid(match)) {
    return reject(ErrorCode::bad_request, "malformed percent-encoding in the request target");
  }

  into.endpoint = match.route == Route::widget ? Endpoint::widget : Endpoint::reviews;
  into.query = ReviewsQuery{};
  if (into.endpoint == Endpoint::reviews) {
    auto parsed = parse_reviews_query(match.raw_query);
    if (auto* rejection = std::get_if<Rejection>(&parsed)) return std::move(*rejection);
    into.query = std::get<ReviewsQuery>(parsed);
  }

  percent_decode_into(match.raw_widget, into.widget_id);  // valid: checked above
  // "." and ".." would become dot-segments somewhere down the line, whatever a custom
  // pattern allows.
  if (into.widget_id == "." || into.widget_id == ".." || !policy.allows(into.widget_id)) {
    return reject(ErrorCode::widget_not_found);
  }
  return std::nullopt;
}

}  // namespace wg::api
