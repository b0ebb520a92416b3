#include "widget_gateway/cache/page_window.hpp"

#include <algorithm>

#include "widget_gateway/api/platform.hpp"

namespace wg::cache {

std::vector<std::uint64_t> windows_for(std::uint64_t skip, std::uint32_t limit) {
  std::vector<std::uint64_t> windows;
  if (limit == 0) return windows;
  const std::uint64_t first = skip / kWindowSize * kWindowSize;
  const std::uint64_t last = (skip + limit - 1) / kWindowSize * kWindowSize;
  for (std::uint64_t start = first; start <= last; start += kWindowSize) {
    windows.push_back(start);
  }
  return windows;
}

namespace {

const std::vector<std::string_view>* find_window(const WindowElements& windows,
                                                 std::uint64_t start) {
  const auto found = std::find_if(windows.begin(), windows.end(),
                                  [start](const auto& window) { return window.first == start; });
  return found == windows.end() ? nullptr : &found->second;
}

}  // namespace

std::optional<std::string> slice_page(std::uint64_t skip, std::uint32_t limit,
                                      const WindowElements& windows) {
  const std::uint64_t end = skip + limit;
  std::vector<std::string_view> picked;
  picked.reserve(limit);
  for (const std::uint64_t start : windows_for(skip, limit)) {
    const std::vector<std::string_view>* elements = find_window(windows, start);
    if (elements == nullptr || elements->size() > kWindowSize) return std::nullopt;
    const std::uint64_t from = std::max(skip, start) - start;
    const std::uint64_t to = std::min<std::uint64_t>(end - start, elements->size());
    for (std::uint64_t i = from; i < to; ++i) picked.push_back((*elements)[i]);
    if (elements->size() < kWindowSize) break;  // the list ends in this window
  }

  std::size_t size = 2 + (picked.empty() ? 0 : picked.size() - 1);
  for (const std::string_view element : picked) size += element.size();
  std::string page;
  page.reserve(size);
  page.push_back('[');
  for (std::size_t i = 0; i < picked.size(); ++i) {
    if (i != 0) page.push_back(',');
    page.append(picked[i]);
  }
  page.push_back(']');
  return page;
}

bool is_window(const api::ReviewsQuery& query) {
  return query.limit == kWindowSize && query.skip % kWindowSize == 0;
}

api::ApiRequest window_request(const api::ApiRequest& page_request, std::uint64_t window_start) {
  api::ApiRequest request = page_request;
  request.endpoint = api::Endpoint::reviews;
  request.query.limit = kWindowSize;
  request.query.skip = window_start;
  return request;
}

ListFacts with_window(ListFacts known, std::uint64_t start, std::size_t count) {
  if (count < kWindowSize) {
    const std::uint64_t end = start + count;
    if (!known.end || end < *known.end) known.end = end;
  }
  if (count > 0) known.reaches = std::max<std::uint64_t>(known.reaches, start + count);
  // Windows of one list that disagree (upstream refreshed between them): no end is proven,
  // since answering [] for reviews that exist is the worse mistake.
  if (known.end && *known.end < known.reaches) known.end.reset();
  return known;
}

namespace {

std::optional<std::uint64_t> counted(const api::WidgetSummary& widget, std::string_view code) {
  const auto listed = std::find_if(widget.review_amount.begin(), widget.review_amount.end(),
                                   [code](const auto& amount) { return amount.first == code; });
  if (listed == widget.review_amount.end()) return std::nullopt;
  return listed->second;
}

bool linked(const api::WidgetSummary& widget, std::string_view code) {
  return std::find(widget.source_types.begin(), widget.source_types.end(), code) !=
         widget.source_types.end();
}

std::uint64_t windows_of(std::uint64_t count) {
  return (count + kWindowSize - 1) / kWindowSize;
}

}  // namespace

bool provably_empty(const api::ReviewsQuery& query, const api::WidgetSummary* widget,
                    const ListFacts& list) {
  if (list.end) return query.skip >= *list.end;
  if (query.skip < list.reaches) return false;
  if (widget == nullptr || !widget->consistent) return false;
  if (query.skip >= widget->total_review_amount) return true;
  if (!query.type) return false;

  const std::string_view code = api::to_string(*query.type);
  if (const auto count = counted(*widget, code)) return query.skip >= *count;
  return !linked(*widget, code);
}

std::optional<std::uint64_t> walk_from(const api::ReviewsQuery& query,
                                       const api::WidgetSummary& widget, const ListFacts& list) {
  if (list.end || !widget.consistent || !query.type) return std::nullopt;
  const std::string_view code = api::to_string(*query.type);
  if (counted(widget, code) || !linked(widget, code)) return std::nullopt;
  const std::uint64_t page_window = query.skip - query.skip % kWindowSize;
  const std::uint64_t from = list.reaches - list.reaches % kWindowSize;
  if (page_window <= from) return std::nullopt;
  return from;
}

std::uint64_t upstream_bound(const api::WidgetSummary& widget) {
  // Counts that contradict each other: the larger reading of the total, so that the guard
  // never paces a widget for what its own data allows.
  std::uint64_t total = widget.total_review_amount;
  if (!widget.consistent) {
    std::uint64_t sum = 0;
    for (const auto& amount : widget.review_amount) sum += amount.second;
    total = std::max(total, sum);
  }
  std::uint64_t bound = 1 + windows_of(total);
  for (const auto& [code, count] : widget.review_amount)
    bound += std::max<std::uint64_t>(1, windows_of(count));
  for (std::size_t i = 0; i < widget.source_types.size(); ++i) {
    const std::string& code = widget.source_types[i];
    const bool seen = counted(widget, code) ||
                      std::find(widget.source_types.begin(), widget.source_types.begin() + i,
                                code) != widget.source_types.begin() + i;
    if (!seen) bound += 1;
  }
  return bound;
}

}  // namespace wg::cache
