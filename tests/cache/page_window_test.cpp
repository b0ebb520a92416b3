#include <boost/test/unit_test.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upstream-stub/dataset.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

using wg::api::ApiRequest;
using wg::api::Endpoint;
using wg::api::Platform;
using wg::api::ReviewsQuery;
using wg::api::WidgetSummary;
using wg::cache::kWindowSize;
using wg::cache::provably_empty;
using wg::cache::slice_page;
using wg::cache::window_request;
using wg::cache::WindowElements;
using wg::cache::windows_for;
using wg::upstream::inspect_reviews_body;

using Windows = std::vector<std::uint64_t>;

BOOST_AUTO_TEST_SUITE(page_window_test)

BOOST_AUTO_TEST_CASE(windows_cover_the_page) {
  BOOST_TEST(windows_for(0, 1) == (Windows{0}));
  BOOST_TEST(windows_for(0, 300) == (Windows{0}));
  BOOST_TEST(windows_for(299, 1) == (Windows{0}));
  BOOST_TEST(windows_for(299, 2) == (Windows{0, 300}));
  BOOST_TEST(windows_for(300, 1) == (Windows{300}));
  BOOST_TEST(windows_for(300, 300) == (Windows{300}));
  BOOST_TEST(windows_for(599, 1) == (Windows{300}));
  BOOST_TEST(windows_for(599, 300) == (Windows{300, 600}));
  BOOST_TEST(windows_for(1, 300) == (Windows{0, 300}));
  BOOST_TEST(windows_for(20, 20) == (Windows{0}));
  BOOST_TEST(windows_for(1'000'000'000, 1) == (Windows{999'999'900}));
  BOOST_TEST(windows_for(1'000'000'000, 300) == (Windows{999'999'900, 1'000'000'200}));
  BOOST_TEST(windows_for(5, 0).empty());
}

BOOST_AUTO_TEST_CASE(window_request_keeps_widget_and_type) {
  ApiRequest page{Endpoint::reviews, "abc", ReviewsQuery{20, 320, Platform::googleMap}};
  const ApiRequest window = window_request(page, 300);
  BOOST_TEST((window.endpoint == Endpoint::reviews));
  BOOST_TEST(window.widget_id == "abc");
  BOOST_TEST(window.query.limit == kWindowSize);
  BOOST_TEST(window.query.skip == 300u);
  BOOST_TEST((window.query.type == Platform::googleMap));
  page.query.type.reset();
  BOOST_TEST(!window_request(page, 0).query.type.has_value());
}

namespace {

// Window bodies of widget 0 rendered by the stub, as upstream serves them, with their element
// views (the bodies must outlive the views, hence the map of strings).
struct StubWindows {
  std::map<std::uint64_t, std::string> bodies;
  WindowElements elements;
};

StubWindows stub_windows(const wg::stub::RenderedWidget& widget,
                         std::optional<std::size_t> platform) {
  StubWindows windows;
  for (std::uint64_t start = 0; start <= 1200; start += kWindowSize) {
    windows.bodies[start] = widget.page(start, kWindowSize, platform);
  }
  for (const auto& [start, body] : windows.bodies) {
    auto inspected = inspect_reviews_body(body);
    BOOST_REQUIRE(inspected.has_value());
    BOOST_REQUIRE(inspected->elements.size() <= kWindowSize);
    windows.elements.emplace_back(start, std::move(inspected->elements));
  }
  return windows;
}

}  // namespace

BOOST_AUTO_TEST_CASE(slices_equal_upstream_pages_byte_for_byte) {
  const wg::stub::Dataset dataset(1234, 3);
  const auto widget = dataset.rendered(0);
  BOOST_REQUIRE(widget->review_count() == 700u);

  std::vector<std::optional<std::size_t>> types = {std::nullopt};
  for (const auto& [platform, count] : dataset.plan(0).platforms) types.push_back(platform);
  BOOST_REQUIRE(types.size() >= 4u);

  int compared = 0;
  for (const auto& type : types) {
    const StubWindows windows = stub_windows(*widget, type);
    for (const std::uint32_t limit : {1u, 7u, 20u, 100u, 299u, 300u}) {
      for (const std::uint64_t skip : {0u, 1u, 20u, 150u, 280u, 299u, 300u, 301u, 450u, 599u, 600u,
                                       650u, 699u, 700u, 701u, 899u, 900u, 1000u}) {
        const std::string expected = widget->page(skip, limit, type);
        const auto sliced = slice_page(skip, limit, windows.elements);
        BOOST_REQUIRE_MESSAGE(sliced.has_value(), "limit " << limit << " skip " << skip);
        BOOST_CHECK_MESSAGE(*sliced == expected,
                            "limit " << limit << " skip " << skip << " type " << type.value_or(99));
        ++compared;
      }
    }
  }
  BOOST_TEST(compared >= 40);
}

BOOST_AUTO_TEST_CASE(missing_windows_and_short_last_window) {
  const wg::stub::Dataset dataset(1234, 3);
  const auto widget = dataset.rendered(0);
  StubWindows all = stub_windows(*widget, std::nullopt);

  WindowElements only_first = {all.elements[0]};
  BOOST_TEST(slice_page(0, 300, only_first).has_value());
  BOOST_TEST(!slice_page(290, 20, only_first).has_value());  // needs window 300
  BOOST_TEST(!slice_page(300, 1, only_first).has_value());
  BOOST_TEST(!slice_page(0, 10, WindowElements{}).has_value());

  // A window of fewer than 300 elements ends the list: the next one is not needed.
  const std::vector<std::string_view> first_100(all.elements[0].second.begin(),
                                                all.elements[0].second.begin() + 100);
  const WindowElements short_first = {{0, first_100}};
  BOOST_TEST(*slice_page(90, 20, short_first) == widget->page(90, 10));
  BOOST_TEST(*slice_page(290, 20, short_first) == "[]");
  // An empty window past the end gives [].
  BOOST_TEST(*slice_page(1000, 20, {{900, {}}}) == "[]");
  // A window holding more than 300 elements is no answer to a window request.
  WindowElements oversized = {{0, std::vector<std::string_view>(301, "{}")}};
  BOOST_TEST(!slice_page(0, 10, oversized).has_value());
  BOOST_TEST(*slice_page(0, 0, {}) == "[]");
}

BOOST_AUTO_TEST_CASE(provably_empty_table) {
  WidgetSummary widget;
  widget.total_review_amount = 700;
  widget.review_amount = {{"yaSprav", 500}, {"googleMap", 200}, {"zoon", 0}};
  widget.source_types = {"yaSprav", "googleMap", "zoon", "otzovik"};

  WidgetSummary inconsistent;
  inconsistent.total_review_amount = 50;
  inconsistent.review_amount = {{"avito", 50}};  // listed with reviews, but not a source

  WidgetSummary empty;  // no reviews, no sources

  struct Row {
    const WidgetSummary* widget;
    std::uint64_t skip;
    std::optional<Platform> type;
    bool expected;
  };
  const std::vector<Row> rows = {
      {&widget, 0, std::nullopt, false},          {&widget, 699, std::nullopt, false},
      {&widget, 700, std::nullopt, true},         {&widget, 1'000'000'000, std::nullopt, true},
      {&widget, 0, Platform::yaSprav, false},     {&widget, 499, Platform::yaSprav, false},
      {&widget, 500, Platform::yaSprav, true},    {&widget, 199, Platform::googleMap, false},
      {&widget, 200, Platform::googleMap, true},  {&widget, 0, Platform::zoon, true},  // count 0
      {&widget, 0, Platform::avito, true},      // not a source, not counted
      {&widget, 0, Platform::otzovik, false},   // a source missing from reviewAmount: unknown
      {&widget, 700, Platform::otzovik, true},  // but never past the total
      {&inconsistent, 0, Platform::avito, false}, {&inconsistent, 50, Platform::avito, true},
      {&inconsistent, 0, Platform::zoon, true},   {&empty, 0, std::nullopt, true},
      {&empty, 0, Platform::googleMap, true},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const ReviewsQuery query{20, row.skip, row.type};
    BOOST_CHECK_MESSAGE(provably_empty(query, *row.widget) == row.expected, "row " << i);
  }

  // Counts that contradict each other prove nothing, not even past their own total.
  WidgetSummary contradicting = widget;
  contradicting.consistent = false;
  for (const Row& row : rows) {
    if (row.widget != &widget) continue;
    BOOST_TEST(!provably_empty(ReviewsQuery{20, row.skip, row.type}, contradicting));
  }
  // The windows still do.
  BOOST_TEST(
      provably_empty({20, 50, std::nullopt}, &contradicting, wg::cache::with_window({}, 0, 7)));
}

BOOST_AUTO_TEST_CASE(only_a_list_no_count_measures_is_walked_up_to_a_page) {
  using wg::cache::ListFacts;
  using wg::cache::with_window;
  static constexpr std::uint64_t kNoWalk = ~std::uint64_t{0};
  const auto walk_from = [](const ReviewsQuery& query, const WidgetSummary& widget,
                            const ListFacts& list) {
    return wg::cache::walk_from(query, widget, list).value_or(kNoWalk);
  };
  WidgetSummary widget;
  widget.total_review_amount = 3000;
  widget.review_amount = {{"yaSprav", 3000}, {"zoon", 0}};
  widget.source_types = {"yaSprav", "zoon", "otzovik"};  // otzovik: named only in sources

  // Counted lists, or no type: the counts measure them.
  BOOST_TEST(walk_from({20, 2900, std::nullopt}, widget, {}) == kNoWalk);
  BOOST_TEST(walk_from({20, 2900, Platform::yaSprav}, widget, {}) == kNoWalk);
  BOOST_TEST(walk_from({20, 2900, Platform::zoon}, widget, {}) == kNoWalk);
  BOOST_TEST(walk_from({20, 2900, Platform::avito}, widget, {}) == kNoWalk);  // not linked
  // otzovik: from window 0, unless the page is in it.
  BOOST_TEST(walk_from({20, 2900, Platform::otzovik}, widget, {}) == 0u);
  BOOST_TEST(walk_from({20, 300, Platform::otzovik}, widget, {}) == 0u);
  BOOST_TEST(walk_from({20, 299, Platform::otzovik}, widget, {}) == kNoWalk);
  // From the first window not known to be full; not at all once the end is known.
  const auto full_two = with_window(with_window({}, 0, 300), 300, 300);
  BOOST_TEST(walk_from({20, 2900, Platform::otzovik}, widget, full_two) == 600u);
  BOOST_TEST(walk_from({20, 600, Platform::otzovik}, widget, full_two) == kNoWalk);
  BOOST_TEST(walk_from({20, 2900, Platform::otzovik}, widget, with_window({}, 0, 12)) == kNoWalk);
  // Counts that contradict each other measure nothing, and start no walk either.
  WidgetSummary contradicting = widget;
  contradicting.consistent = false;
  BOOST_TEST(walk_from({20, 2900, Platform::otzovik}, contradicting, {}) == kNoWalk);
}

BOOST_AUTO_TEST_CASE(windows_win_over_the_counts) {
  using wg::cache::ListFacts;
  using wg::cache::with_window;
  WidgetSummary widget;
  widget.total_review_amount = 100;  // says 100 reviews in all
  widget.review_amount = {{"yaSprav", 100}};
  widget.source_types = {"yaSprav", "otzovik"};

  // A full window 0: the list reaches 300 whatever the count says.
  const ListFacts reaches = with_window({}, 0, kWindowSize);
  BOOST_TEST(!reaches.end.has_value());
  BOOST_TEST(reaches.reaches == 300u);
  BOOST_TEST(!provably_empty({20, 100, std::nullopt}, &widget, reaches));
  BOOST_TEST(!provably_empty({20, 299, std::nullopt}, &widget, reaches));
  BOOST_TEST(provably_empty({20, 300, std::nullopt}, &widget, reaches));  // the count again

  // A short window 300: the list ends at 420; past it empty even where the count says more.
  const ListFacts ends = with_window(reaches, 300, 120);
  BOOST_TEST((ends.end == std::optional<std::uint64_t>(420)));
  BOOST_TEST(!provably_empty({20, 419, std::nullopt}, &widget, ends));
  BOOST_TEST(provably_empty({20, 420, std::nullopt}, &widget, ends));
  WidgetSummary more = widget;
  more.total_review_amount = 5000;
  BOOST_TEST(provably_empty({20, 600, std::nullopt}, &more, ends));

  // Without any widget data, the windows alone.
  BOOST_TEST(provably_empty({1, 179'700, std::nullopt}, nullptr, ends));
  BOOST_TEST(!provably_empty({1, 10, std::nullopt}, nullptr, ends));
  BOOST_TEST(!provably_empty({1, 10'000, std::nullopt}, nullptr, reaches));  // no end known
  BOOST_TEST(!provably_empty({1, 10'000, std::nullopt}, nullptr, {}));

  // A platform named only by sources (no count): its short window 0 ends it.
  const ListFacts otzovik = with_window({}, 0, 7);
  BOOST_TEST(!provably_empty({20, 50, Platform::otzovik}, &widget, {}));
  BOOST_TEST(provably_empty({20, 50, Platform::otzovik}, &widget, otzovik));
  BOOST_TEST(provably_empty({20, 7, Platform::otzovik}, &widget, otzovik));
  BOOST_TEST(!provably_empty({20, 6, Platform::otzovik}, &widget, otzovik));

  // An empty window ends the list at its start.
  BOOST_TEST((with_window({}, 600, 0).end == std::optional<std::uint64_t>(600)));
  // Windows that contradict each other (upstream refreshed between them) prove no end.
  const ListFacts contradicted = with_window(with_window({}, 0, 50), 300, kWindowSize);
  BOOST_TEST(!contradicted.end.has_value());
  BOOST_TEST(!provably_empty({20, 100, std::nullopt}, nullptr, contradicted));
}

BOOST_AUTO_TEST_CASE(upstream_bound_per_widget) {
  using wg::cache::upstream_bound;
  WidgetSummary widget;
  widget.total_review_amount = 700;
  widget.review_amount = {{"yaSprav", 500}, {"googleMap", 200}, {"zoon", 0}};
  widget.source_types = {"yaSprav", "googleMap", "zoon", "otzovik", "otzovik"};
  // 1 (widget data) + 3 (700 / 300) + yaSprav 2 + googleMap 1 + zoon max(1, 0) + otzovik 1.
  BOOST_TEST(upstream_bound(widget) == 1u + 3u + 2u + 1u + 1u + 1u);

  WidgetSummary empty;
  BOOST_TEST(upstream_bound(empty) == 1u);
  WidgetSummary exact;
  exact.total_review_amount = 600;
  exact.review_amount = {{"avito", 600}};
  BOOST_TEST(upstream_bound(exact) == 1u + 2u + 2u);
  // Contradicting counts: the larger reading of the total.
  WidgetSummary contradicting;
  contradicting.total_review_amount = 0;
  contradicting.review_amount = {{"avito", 600}};
  contradicting.consistent = false;
  BOOST_TEST(upstream_bound(contradicting) == 1u + 2u + 2u);
}

BOOST_AUTO_TEST_SUITE_END()  // page_window_test
