#include "widget_gateway/upstream/body_inspector.hpp"

#include <simdjson.h>

#include <cstring>

namespace wg::upstream {
namespace {

// Bodies up to this size are parsed by the thread's own parser, into its own padded copy, both
// kept: a parser made per body allocated and faulted in about ten bytes per byte of a 150 KB
// window on every miss (half the page faults of a worker in zipf-site). The few larger bodies
// get a parser of their own, so what a thread keeps stays bounded.
constexpr std::size_t kReusedCapacity = 512 * 1024;

struct Parsing {
  simdjson::dom::parser parser{kReusedCapacity};
  std::string padded;  // the body, then SIMDJSON_PADDING bytes
};

// simdjson's DOM parser validates the whole document (structure, strings, numbers, UTF-8)
// and rejects trailing content, which is exactly the bar a body must pass to be cached. The
// element lives in `parser`, valid until its next parse.
std::optional<simdjson::dom::element> parse_validated(std::string_view body,
                                                      std::optional<simdjson::dom::parser>& own) {
  thread_local Parsing reused;
  simdjson::dom::element root;
  if (body.size() > kReusedCapacity) {
    own.emplace();
    if (own->parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) return std::nullopt;
    return root;
  }
  reused.padded.assign(body);
  reused.padded.append(simdjson::SIMDJSON_PADDING, '\0');
  if (reused.parser.parse(reused.padded.data(), body.size(), false).get(root) !=
      simdjson::SUCCESS) {
    return std::nullopt;
  }
  return root;
}

// A review count: a JSON integer that is not negative. simdjson types any number with a
// fraction or an exponent as a double (12.0, 1.2e1), and those are refused: upstream writes
// counts as plain integers, so anything else means its answer is not what we think it is.
std::optional<std::uint64_t> as_count(simdjson::dom::element value) {
  switch (value.type()) {
    case simdjson::dom::element_type::UINT64:  // above INT64_MAX
      return value.get_uint64().value_unsafe();
    case simdjson::dom::element_type::INT64: {
      const std::int64_t v = value.get_int64().value_unsafe();
      if (v < 0) return std::nullopt;
      return static_cast<std::uint64_t>(v);  // -0 reads as 0
    }
    default:
      return std::nullopt;
  }
}

bool is_json_whitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_whitespace(std::string_view text, std::size_t pos) {
  while (pos < text.size() && is_json_whitespace(text[pos])) ++pos;
  return pos;
}

// The closing quote of the (validated) string that opens at `open`, or text.size(). A quote is
// escaped when an odd number of backslashes precedes it. memchr, not a byte loop: strings are
// most of a review's bytes, and this scan ran slower than simdjson's whole parse.
std::size_t closing_quote(std::string_view text, std::size_t open) {
  std::size_t from = open + 1;
  while (from < text.size()) {
    const void* found = std::memchr(text.data() + from, '"', text.size() - from);
    if (found == nullptr) break;
    const std::size_t quote =
        static_cast<std::size_t>(static_cast<const char*>(found) - text.data());
    std::size_t backslashes = 0;
    while (text[quote - 1 - backslashes] == '\\') ++backslashes;  // stops at the opening quote
    if (backslashes % 2 == 0) return quote;
    from = quote + 1;
  }
  return text.size();
}

// Splits an array that simdjson has already validated into the exact byte spans of its
// elements. Validation makes this scan simple: only strings (which may contain brackets and
// commas) and nesting depth need tracking. Returns nullopt if the text turns out not to be
// an array after all (a bug guard, not an expected path).
std::optional<std::vector<std::string_view>> split_validated_array(std::string_view text) {
  std::vector<std::string_view> elements;
  std::size_t pos = skip_whitespace(text, 0);
  if (pos >= text.size() || text[pos] != '[') return std::nullopt;
  pos = skip_whitespace(text, pos + 1);
  if (pos < text.size() && text[pos] == ']') return elements;

  while (pos < text.size()) {
    const std::size_t start = pos;
    std::size_t last_significant = pos;  // one past the element's last non-whitespace byte
    int depth = 0;
    for (; pos < text.size(); ++pos) {
      const char c = text[pos];
      if (c == '"') {
        pos = closing_quote(text, pos);
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) break;  // the array's own closing bracket
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      } else if (is_json_whitespace(c)) {
        continue;
      }
      last_significant = pos + 1;
    }
    if (pos >= text.size()) return std::nullopt;
    elements.push_back(text.substr(start, last_significant - start));
    if (text[pos] == ']') return elements;
    pos = skip_whitespace(text, pos + 1);  // past the comma
  }
  return std::nullopt;
}

}  // namespace

std::optional<api::WidgetSummary> inspect_widget_body(std::string_view body) {
  std::optional<simdjson::dom::parser> own;
  const auto root = parse_validated(body, own);
  if (!root) return std::nullopt;
  simdjson::dom::object widget;
  if (root->get_object().get(widget) != simdjson::SUCCESS) return std::nullopt;

  api::WidgetSummary summary;
  simdjson::dom::element total;
  if (widget.at_key("totalReviewAmount").get(total) != simdjson::SUCCESS) return std::nullopt;
  const auto total_count = as_count(total);
  if (!total_count) return std::nullopt;
  summary.total_review_amount = *total_count;

  simdjson::dom::object amounts;  // missing and not an object fail alike
  if (widget.at_key("reviewAmount").get(amounts) != simdjson::SUCCESS) return std::nullopt;
  std::uint64_t platforms_sum = 0;
  bool overflow = false;
  for (const auto [platform, value] : amounts) {
    const auto count = as_count(value);
    if (!count) return std::nullopt;
    summary.review_amount.emplace_back(platform, *count);
    overflow = overflow || __builtin_add_overflow(platforms_sum, *count, &platforms_sum);
  }
  summary.consistent = !overflow && platforms_sum == summary.total_review_amount;
  simdjson::dom::object stars;
  if (summary.consistent && widget.at_key("reviewStars").get(stars) == simdjson::SUCCESS) {
    std::uint64_t stars_sum = 0;
    bool counts = true;
    for (const auto [name, value] : stars) {
      const auto count = as_count(value);
      counts = counts && count && !__builtin_add_overflow(stars_sum, *count, &stars_sum);
    }
    if (counts && stars_sum > summary.total_review_amount) summary.consistent = false;
  }

  simdjson::dom::element sources_field;
  if (widget.at_key("sources").get(sources_field) == simdjson::SUCCESS) {
    simdjson::dom::array sources;
    if (sources_field.get_array().get(sources) != simdjson::SUCCESS) return std::nullopt;
    for (const simdjson::dom::element source : sources) {
      std::string_view type;
      if (source["type"].get(type) == simdjson::SUCCESS) summary.source_types.emplace_back(type);
    }
  }
  return summary;
}

std::optional<ReviewsSummary> inspect_reviews_body(std::string_view body) {
  std::optional<simdjson::dom::parser> own;
  const auto root = parse_validated(body, own);
  if (!root) return std::nullopt;
  simdjson::dom::array reviews;
  if (root->get_array().get(reviews) != simdjson::SUCCESS) return std::nullopt;
  for (const simdjson::dom::element review : reviews) {
    if (!review.is_object()) return std::nullopt;
  }

  auto elements = split_validated_array(body);
  if (!elements || elements->size() != reviews.size()) return std::nullopt;
  return ReviewsSummary{std::move(*elements)};
}

}  // namespace wg::upstream
