// The last-known-good rule (serving::judge_answer): every row of docs/freshness.md's table,
// and the verdicts around a hold.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "serving/trust_policy.hpp"

using namespace std::chrono_literals;
using wg::WallTime;
using wg::api::Endpoint;
using wg::api::Platform;
using wg::api::ReviewsQuery;
using wg::api::WidgetSummary;
using wg::cache::Hold;
using wg::serving::AdoptedBasis;
using wg::serving::AnswerShape;
using wg::serving::judge_answer;
using wg::serving::takes_more_than_half;
using wg::serving::Verdict;

namespace {

const WallTime kTrustNow = WallTime{} + std::chrono::hours(24 * 365 * 57);

WidgetSummary widget(std::uint64_t total, std::vector<std::pair<std::string, std::uint64_t>> by) {
  WidgetSummary w;
  w.total_review_amount = total;
  w.review_amount = std::move(by);
  std::uint64_t sum = 0;
  for (const auto& amount : w.review_amount) sum += amount.second;
  w.consistent = sum == total;
  return w;
}

AnswerShape widget_answer(WidgetSummary w) {
  return AnswerShape{200, std::move(w), 0};
}
AnswerShape reviews_answer(std::size_t n) {
  return AnswerShape{200, std::nullopt, n};
}
AnswerShape unknown(std::uint16_t status) {
  return AnswerShape{status, std::nullopt, 0};
}

const WidgetSummary k700 = widget(700, {{"yaSprav", 500}, {"googleMap", 200}});

struct TrustRow {
  std::string what;
  Endpoint endpoint;
  ReviewsQuery query;
  AnswerShape answer;
  AdoptedBasis basis;
  bool takes;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(trust_policy_test)

BOOST_AUTO_TEST_SUITE(trust_policy)

BOOST_AUTO_TEST_CASE(what_takes_more_than_half_away) {
  const ReviewsQuery none{};
  const ReviewsQuery window0{300, 0, std::nullopt};
  const std::vector<TrustRow> rows = {
      // Widget data against the adopted widget data.
      {"the same counts",
       Endpoint::widget,
       none,
       widget_answer(k700),
       {widget_answer(k700), {}, {}, false},
       false},
      {"the total falls to 0",
       Endpoint::widget,
       none,
       widget_answer(widget(0, {{"yaSprav", 0}, {"googleMap", 0}})),
       {widget_answer(k700), {}, {}, false},
       true},
      {"the total falls to exactly half",
       Endpoint::widget,
       none,
       widget_answer(widget(350, {{"yaSprav", 250}, {"googleMap", 100}})),
       {widget_answer(k700), {}, {}, false},
       false},
      {"the total falls below half",
       Endpoint::widget,
       none,
       widget_answer(widget(349, {{"yaSprav", 250}, {"googleMap", 99}})),
       {widget_answer(k700), {}, {}, false},
       true},
      {"one platform falls below half, the total does not",
       Endpoint::widget,
       none,
       widget_answer(widget(600, {{"yaSprav", 501}, {"googleMap", 99}})),
       {widget_answer(k700), {}, {}, false},
       true},
      {"a platform disappears",
       Endpoint::widget,
       none,
       widget_answer(widget(500, {{"yaSprav", 500}})),
       {widget_answer(k700), {}, {}, false},
       true},
      {"a platform appears, the counts grow",
       Endpoint::widget,
       none,
       widget_answer(widget(1000, {{"yaSprav", 500}, {"googleMap", 200}, {"zoon", 300}})),
       {widget_answer(k700), {}, {}, false},
       false},
      {"a platform of 1 falls to 0",
       Endpoint::widget,
       none,
       widget_answer(widget(700, {{"yaSprav", 700}, {"zoon", 0}})),
       {widget_answer(widget(701, {{"yaSprav", 700}, {"zoon", 1}})), {}, {}, false},
       true},
      {"counts that contradict each other, with a copy",
       Endpoint::widget,
       none,
       widget_answer(widget(701, {{"yaSprav", 500}, {"googleMap", 200}})),
       {widget_answer(k700), {}, {}, false},
       true},
      {"counts that contradict each other, without a copy",
       Endpoint::widget,
       none,
       widget_answer(widget(701, {{"yaSprav", 500}, {"googleMap", 200}})),
       {},
       true},
      {"a first answer", Endpoint::widget, none, widget_answer(widget(0, {})), {}, false},
      {"a widget that was unknown exists now",
       Endpoint::widget,
       none,
       widget_answer(k700),
       {unknown(404), {}, {}, false},
       false},
      {"an adopted widget is answered unknown",
       Endpoint::widget,
       none,
       unknown(404),
       {widget_answer(k700), {}, {}, false},
       true},
      {"an unknown widget stays unknown",
       Endpoint::widget,
       none,
       unknown(404),
       {unknown(404), {}, {}, false},
       false},
      {"an unknown widget, first answer", Endpoint::widget, none, unknown(404), {}, false},
      // Reviews against the adopted copy of the page.
      {"a full window comes back full",
       Endpoint::reviews,
       window0,
       reviews_answer(300),
       {reviews_answer(300), {}, {}, false},
       false},
      {"a full window comes back []",
       Endpoint::reviews,
       window0,
       reviews_answer(0),
       {reviews_answer(300), {}, {}, false},
       true},
      {"150 of 300",
       Endpoint::reviews,
       window0,
       reviews_answer(150),
       {reviews_answer(300), {}, {}, false},
       false},
      {"149 of 300",
       Endpoint::reviews,
       window0,
       reviews_answer(149),
       {reviews_answer(300), {}, {}, false},
       true},
      {"an empty page stays empty",
       Endpoint::reviews,
       window0,
       reviews_answer(0),
       {reviews_answer(0), {}, {}, false},
       false},
      {"a page of an adopted widget answered 400",
       Endpoint::reviews,
       window0,
       unknown(400),
       {reviews_answer(300), {}, {}, false},
       true},
      // Reviews of a key without a copy, against the adopted widget data.
      {"window 0 of 700 comes back [] with no copy",
       Endpoint::reviews,
       window0,
       reviews_answer(0),
       {std::nullopt, {}, k700, false},
       true},
      {"the last window of 700 holds 100",
       Endpoint::reviews,
       {300, 600, std::nullopt},
       reviews_answer(100),
       {std::nullopt, {}, k700, false},
       false},
      {"the last window of 700 holds 49",
       Endpoint::reviews,
       {300, 600, std::nullopt},
       reviews_answer(49),
       {std::nullopt, {}, k700, false},
       true},
      {"past the end",
       Endpoint::reviews,
       {300, 900, std::nullopt},
       reviews_answer(0),
       {std::nullopt, {}, k700, false},
       false},
      {"a typed page, short",
       Endpoint::reviews,
       {20, 180, Platform::googleMap},
       reviews_answer(9),
       {std::nullopt, {}, k700, false},
       true},  // 20 expected
      {"a typed page, half",
       Endpoint::reviews,
       {20, 180, Platform::googleMap},
       reviews_answer(10),
       {std::nullopt, {}, k700, false},
       false},
      {"a typed page, enough",
       Endpoint::reviews,
       {20, 190, Platform::googleMap},
       reviews_answer(10),
       {std::nullopt, {}, k700, false},
       false},  // 10 expected
      {"a type the widget data does not count",
       Endpoint::reviews,
       {20, 0, Platform::zoon},
       reviews_answer(0),
       {std::nullopt, {}, k700, false},
       false},
      {"widget data that contradicts itself proves nothing",
       Endpoint::reviews,
       window0,
       reviews_answer(0),
       {std::nullopt, {}, widget(701, {{"yaSprav", 500}, {"googleMap", 200}}), false},
       false},
      {"no widget data either", Endpoint::reviews, window0, reviews_answer(0), {}, false},
      {"a page of an adopted widget answered 400, no copy",
       Endpoint::reviews,
       window0,
       unknown(400),
       {std::nullopt, {}, k700, false},
       true},
  };
  for (const TrustRow& row : rows) {
    BOOST_TEST(takes_more_than_half(row.endpoint, row.query, row.answer, row.basis) == row.takes,
               row.what);
    const Verdict verdict =
        judge_answer(row.endpoint, row.query, row.answer, row.basis, kTrustNow, 10min);
    const Verdict expected = !row.takes       ? Verdict::adopt
                             : row.basis.copy ? Verdict::hold
                                              : Verdict::provisional;
    BOOST_TEST((verdict == expected), row.what << ": " << to_string(verdict));
  }
}

BOOST_AUTO_TEST_CASE(verdicts_around_a_hold) {
  const ReviewsQuery none{};
  const AnswerShape zero = widget_answer(widget(0, {}));
  const AnswerShape same = widget_answer(k700);
  AdoptedBasis held{widget_answer(k700), Hold{kTrustNow - 4min, false}, {}, false};
  // Before confirm_after: still held; an answer that restores ends the hold.
  BOOST_TEST((judge_answer(Endpoint::widget, none, zero, held, kTrustNow, 10min) == Verdict::hold));
  BOOST_TEST((judge_answer(Endpoint::widget, none, same, held, kTrustNow, 10min) == Verdict::restore));
  // After it: adopted whatever it says.
  BOOST_TEST(
      (judge_answer(Endpoint::widget, none, zero, held, kTrustNow + 6min, 10min) == Verdict::confirm));
  BOOST_TEST(
      (judge_answer(Endpoint::widget, none, same, held, kTrustNow + 6min, 10min) == Verdict::restore));
  // A provisional copy (nothing adopted): the answer is judged against the widget data again,
  // and adopted once confirm_after has passed.
  AdoptedBasis provisional{std::nullopt, Hold{kTrustNow - 11min, true}, k700, false};
  BOOST_TEST((judge_answer(Endpoint::reviews, {300, 0, std::nullopt}, reviews_answer(0),
                           provisional, kTrustNow, 10min) == Verdict::confirm));
  provisional.hold->since = kTrustNow - 1min;
  BOOST_TEST((judge_answer(Endpoint::reviews, {300, 0, std::nullopt}, reviews_answer(0),
                           provisional, kTrustNow, 10min) == Verdict::provisional));
  BOOST_TEST((judge_answer(Endpoint::reviews, {300, 0, std::nullopt}, reviews_answer(300),
                           provisional, kTrustNow, 10min) == Verdict::restore));
  // After a purge, and with confirm_after 0: adopted as it comes.
  AdoptedBasis purged{widget_answer(k700), {}, {}, true};
  BOOST_TEST((judge_answer(Endpoint::widget, none, zero, purged, kTrustNow, 10min) == Verdict::adopt));
  AdoptedBasis plain{widget_answer(k700), {}, {}, false};
  BOOST_TEST((judge_answer(Endpoint::widget, none, zero, plain, kTrustNow, 0min) == Verdict::adopt));
  BOOST_TEST(wg::serving::adopts(Verdict::confirm));
  BOOST_TEST(!wg::serving::adopts(Verdict::hold));
  BOOST_TEST(!wg::serving::adopts(Verdict::provisional));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // trust_policy_test
