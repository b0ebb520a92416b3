#pragma once
// Page derivation: the gateway fetches reviews from upstream in aligned windows of the
// largest page size and serves any (limit, skip) from them by slicing the raw element bytes
// (nothing is re-serialized), so the upstream calls for one widget per day are bounded by its
// review count / kWindowSize whatever pages clients ask for. Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "widget_gateway/api/request.hpp"
#include "widget_gateway/api/widget_summary.hpp"

namespace wg::cache {

inline constexpr std::uint32_t kWindowSize = 300;

// Start offsets of the aligned windows [k*300, (k+1)*300) covering [skip, skip + limit), in
// order: one or two since limit <= 300 (empty for limit 0).
std::vector<std::uint64_t> windows_for(std::uint64_t skip, std::uint32_t limit);

// Element views of one window's body (upstream::inspect_reviews_body), by window start.
using WindowElements = std::vector<std::pair<std::uint64_t, std::vector<std::string_view>>>;

// The page body "[e1,e2,...]" for (skip, limit), exactly as upstream writes it (elements joined
// by "," without whitespace), from the windows that cover it. A window with fewer than 300
// elements is the last one of the list, so windows past it are not needed. nullopt when a
// needed window is missing or holds more than 300 elements (not an answer to a window request).
std::optional<std::string> slice_page(std::uint64_t skip, std::uint32_t limit,
                                      const WindowElements& windows);

// True when `query` asks for one aligned window itself (limit 300, skip a multiple of 300): such
// a page is stored as it is, never cut from windows.
bool is_window(const api::ReviewsQuery& query);

// The upstream request for a window: the page request with limit = 300 and skip = window start
// (same widget, same type filter).
api::ApiRequest window_request(const api::ApiRequest& page_request, std::uint64_t window_start);

// What windows showed of one list (a widget's reviews, all platforms or one): a window with
// fewer than kWindowSize elements proves where the list ends; a full one, that the list
// reaches past it.
struct ListFacts {
  std::optional<std::uint64_t> end;  // the list has exactly this many elements
  std::uint64_t reaches = 0;         // the list has at least this many elements
  bool operator==(const ListFacts&) const = default;
};
// The facts a window holding `count` elements at `start` adds to `known`.
ListFacts with_window(ListFacts known, std::uint64_t start, std::size_t count);

// True when what is known proves that upstream would answer `query` with []. The windows win
// over the widget data's counts wherever both speak (upstream's lists are what pages are cut
// from; a count that disagrees with them is the one that is wrong):
// - a known list end: skip >= end; and never empty for skip < reaches;
// - otherwise the widget data (`widget`, may be null):
//   - skip >= totalReviewAmount (with or without a type filter);
//   - a type filter and reviewAmount lists the type: skip >= reviewAmount[type] (so a count
//     of 0 is always empty);
//   - a type filter, reviewAmount does not list the type, and the type is not among the
//     widget's sources ("reviews come only from platforms whose links are added to the
//     widget").
// Anything else is not proof: a type listed with a positive count but absent from sources, or
// a linked type missing from reviewAmount, goes upstream, since answering [] for reviews that
// exist is the worse mistake. Widget data whose counts contradict each other
// (WidgetSummary::consistent) proves nothing.
bool provably_empty(const api::ReviewsQuery& query, const api::WidgetSummary* widget,
                    const ListFacts& list = {});
inline bool provably_empty(const api::ReviewsQuery& query, const api::WidgetSummary& widget) {
  return provably_empty(query, &widget);
}

// Where a page's list must be walked up from before the page can be judged, or nullopt when
// it need not be. A list whose length neither the counts nor the windows seen give (a platform
// the widget data names only in `sources`) is walked up from its first window not known to be
// full, never down from the page: the first window that is not full proves where the list
// ends, so a walk down from the top, which costs a window at every step when the list is
// empty, costs one call. Only for consistent widget data, and only when the page starts past
// that window (a page in it is simply served from it).
std::optional<std::uint64_t> walk_from(const api::ReviewsQuery& query,
                                       const api::WidgetSummary& widget, const ListFacts& list);

// The most upstream requests one widget can need between two refreshes of its entries when
// every page is cut from windows: 1 (widget data) + ceil(total / 300) (all-platform windows)
// + for each platform the widget data names (in reviewAmount or sources) max(1,
// ceil(count / 300)). The per-widget guard allows this plus a slack.
std::uint64_t upstream_bound(const api::WidgetSummary& widget);
// What a widget costs before its widget data is known: that data and its first window.
inline constexpr std::uint64_t kBoundWithoutWidgetData = 2;

}  // namespace wg::cache
