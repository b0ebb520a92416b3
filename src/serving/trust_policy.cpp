#include "trust_policy.hpp"

#include <algorithm>

#include "widget_gateway/api/platform.hpp"

namespace wg::serving {

namespace {

// "Below half", strictly (2 * value < adopted, without overflow): 150 of 300 is not, 149 is;
// 0 of 1 is; nothing is below half of 0.
bool below_half(std::uint64_t value, std::uint64_t adopted) {
  return value < adopted - adopted / 2;
}

std::uint64_t count_of(const api::WidgetSummary& widget, std::string_view code) {
  const auto found = std::find_if(widget.review_amount.begin(), widget.review_amount.end(),
                                  [code](const auto& amount) { return amount.first == code; });
  return found == widget.review_amount.end() ? 0 : found->second;
}

bool widget_takes_away(const api::WidgetSummary& answer, const api::WidgetSummary& adopted) {
  if (below_half(answer.total_review_amount, adopted.total_review_amount)) return true;
  return std::any_of(adopted.review_amount.begin(), adopted.review_amount.end(),
                     [&](const auto& amount) {
                       return below_half(count_of(answer, amount.first), amount.second);
                     });
}

// How many reviews the adopted widget data says the page (limit, skip, type) holds; nullopt
// when it does not say (a type it does not count, or counts that contradict each other).
std::optional<std::uint64_t> expected_reviews(const api::ReviewsQuery& query,
                                              const api::WidgetSummary& widget) {
  if (!widget.consistent) return std::nullopt;
  std::uint64_t count = widget.total_review_amount;
  if (query.type) {
    const std::string_view code = api::to_string(*query.type);
    const auto listed = std::find_if(widget.review_amount.begin(), widget.review_amount.end(),
                                     [code](const auto& amount) { return amount.first == code; });
    if (listed == widget.review_amount.end()) return std::nullopt;
    count = listed->second;
  }
  if (query.skip >= count) return 0;
  return std::min<std::uint64_t>(query.limit, count - query.skip);
}

}  // namespace

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::adopt:
      return "adopt";
    case Verdict::confirm:
      return "confirm";
    case Verdict::restore:
      return "restore";
    case Verdict::hold:
      return "hold";
    case Verdict::provisional:
      return "provisional";
  }
  return "adopt";
}

bool takes_more_than_half(api::Endpoint endpoint, const api::ReviewsQuery& query,
                          const AnswerShape& answer, const AdoptedBasis& basis) {
  const std::optional<AnswerShape>& copy = basis.copy;
  if (answer.status != 200) {
    // "I do not know this widget", where upstream answered it before.
    if (copy) return copy->status == 200;
    return endpoint == api::Endpoint::reviews && basis.widget_data.has_value();
  }
  if (endpoint == api::Endpoint::widget) {
    if (!answer.widget) return false;
    if (!answer.widget->consistent) return true;  // never trusted as it is
    if (!copy || copy->status != 200 || !copy->widget) return false;
    return widget_takes_away(*answer.widget, *copy->widget);
  }
  if (copy) return copy->status == 200 && below_half(answer.reviews, copy->reviews);
  if (!basis.widget_data) return false;
  const std::optional<std::uint64_t> expected = expected_reviews(query, *basis.widget_data);
  return expected && below_half(answer.reviews, *expected);
}

Verdict judge_answer(api::Endpoint endpoint, const api::ReviewsQuery& query,
                     const AnswerShape& answer, const AdoptedBasis& basis, WallTime now,
                     std::chrono::milliseconds confirm_after) {
  if (basis.purged || confirm_after.count() <= 0) return Verdict::adopt;
  const bool takes = takes_more_than_half(endpoint, query, answer, basis);
  if (basis.hold && now >= basis.hold->since + confirm_after) {
    return takes ? Verdict::confirm : Verdict::restore;
  }
  if (!takes) return basis.hold ? Verdict::restore : Verdict::adopt;
  return basis.copy ? Verdict::hold : Verdict::provisional;
}

}  // namespace wg::serving
