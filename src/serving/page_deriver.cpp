#include "page_deriver.hpp"

#include <algorithm>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

// A window's elements: from the offsets recorded when it was fetched or first parsed here,
// else parsed (a window read from Redis, or stored by another instance). Parsed, `window`
// becomes a copy that carries the offsets (entries do not change once shared), for the caller
// to keep in L1 for the next page cut from it, and the elements lie in that copy's body.
// `parsed` says whether it was.
std::optional<std::vector<std::string_view>> window_elements(
    std::shared_ptr<const cache::Entry>& window, bool& parsed) {
  parsed = false;
  if (window->element_spans) {
    if (auto elements = cache::elements_from_spans(window->body, *window->element_spans)) {
      return elements;
    }
  }
  auto summary = upstream::inspect_reviews_body(window->body);
  if (!summary) return std::nullopt;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;
  spans.reserve(summary->elements.size());
  for (std::string_view element : summary->elements) {
    spans.emplace_back(static_cast<std::uint32_t>(element.data() - window->body.data()),
                       static_cast<std::uint32_t>(element.size()));
  }
  window = cache::with_element_spans(*window, std::move(spans));
  parsed = true;
  return cache::elements_from_spans(window->body, *window->element_spans);
}

Served invalid_window(WallTime now) {
  Served invalid;
  invalid.error = api::ErrorCode::upstream_error;
  invalid.failure = RequestFacts::Failure::upstream;
  invalid.now = now;
  return invalid;
}

}  // namespace

std::vector<PageDeriver::Window> PageDeriver::windows_of(const api::ApiRequest& page) {
  std::vector<Window> windows;
  for (std::uint64_t start : cache::windows_for(page.query.skip, page.query.limit)) {
    Window window{start, cache::window_request(page, start), {}};
    window.key = api::cache_key(window.request);
    windows.push_back(std::move(window));
  }
  return windows;
}

asio::awaitable<std::optional<Served>> PageDeriver::walk(const api::ApiRequest& page,
                                                         std::uint64_t from, std::uint64_t until,
                                                         const ServeWindow& serve_window) {
  for (std::uint64_t start = from; start < until; start += cache::kWindowSize) {
    Window window{start, cache::window_request(page, start), {}};
    window.key = api::cache_key(window.request);
    Served part = co_await serve_window(window);
    if (!part.ok() || part.entry->status != 200) co_return part;
    if (part.proven) co_return std::nullopt;  // past the end already
    bool parsed = false;
    std::optional<std::vector<std::string_view>> elements = window_elements(part.entry, parsed);
    if (parsed) cache_.store_local(window.key, part.entry);  // charged with its offsets
    if (!elements) co_return invalid_window(part.now);
    if (list_ends_ != nullptr) {
      list_ends_->record_window(window.request, *part.entry, elements->size(), clock_.wall_now());
    }
    if (elements->size() < cache::kWindowSize) co_return std::nullopt;  // the list ends here
  }
  co_return std::nullopt;
}

asio::awaitable<Served> PageDeriver::derive(const api::ApiRequest& page,
                                            const std::string& page_key,
                                            const std::vector<Window>& windows,
                                            const ServeWindow& serve_window) {
  std::vector<Served> parts;
  cache::WindowElements elements_by_window;
  std::shared_ptr<const cache::Entry> cut;
  bool reuse_page = false;
  bool local_first = false;  // the first window is proven empty: so is the page
  for (const Window& window : windows) {
    Served part = co_await serve_window(window);
    if (!part.ok()) co_return part;
    if (part.entry->status != 200) co_return part;  // unknown widget
    if (part.proven) {
      // Proven empty (past the end of its list): so is the rest of the page.
      local_first = window.start == windows.front().start;
      elements_by_window.emplace_back(window.start, std::vector<std::string_view>{});
      parts.push_back(std::move(part));
      break;
    }
    // The page may already have been cut from this very window: on an earlier request while
    // the window is stale (the page is kept then too), or by a concurrent request that waited
    // for the same window fetch. Parsing the window and compressing the page again for every
    // such request is what saturated the CPU in outages and cold storms. A page carries its one
    // window's times, so equal times mean the same window.
    // Read again here, after the wait, not at the request's first look.
    std::shared_ptr<const cache::Entry> cached =
        windows.size() == 1 ? cache_.l1().get(page_key) : nullptr;
    if (cached && cached->stored_at == part.entry->stored_at &&
        cached->fresh_until == part.entry->fresh_until &&
        cached->stale_until == part.entry->stale_until) {
      cut = std::move(cached);
      reuse_page = true;
      parts.push_back(std::move(part));
      break;
    }
    bool parsed = false;
    std::optional<std::vector<std::string_view>> elements = window_elements(part.entry, parsed);
    if (parsed) cache_.store_local(window.key, part.entry);  // charged with its offsets
    if (!elements) co_return invalid_window(part.now);
    if (list_ends_ != nullptr) {
      list_ends_->record_window(window.request, *part.entry, elements->size(), clock_.wall_now());
    }
    const bool last = elements->size() < cache::kWindowSize;
    elements_by_window.emplace_back(window.start, std::move(*elements));
    parts.push_back(std::move(part));
    if (last) break;  // the list ends inside this window
  }

  // The page's outcome is its windows': fetched if any was, stale if any was.
  Outcome outcome{Outcome::Source::cache, true, Outcome::Detail::derived};
  StaleReason stale = StaleReason::none;
  std::optional<cache::Hold> hold;  // a window that holds back an answer makes the page unconfirmed
  Served served;
  for (const Served& part : parts) {
    if (part.entry->hold && !hold) hold = part.entry->hold;
    const Outcome::Source source = part.outcome.source;
    if (source == Outcome::Source::upstream) outcome.source = Outcome::Source::upstream;
    if (source == Outcome::Source::collapsed && outcome.source == Outcome::Source::cache) {
      outcome.source = Outcome::Source::collapsed;
    }
    served.upstream_ms = std::max(served.upstream_ms, part.upstream_ms);
    if (part.outcome.stale() != StaleReason::none && stale == StaleReason::none) {
      stale = part.outcome.stale();
      served.upstream_error = part.upstream_error;
    }
    outcome.stored = outcome.stored && (source == Outcome::Source::cache || part.outcome.stored);
  }
  const Outcome::Detail kind = hold          ? Outcome::Detail::unconfirmed
                               : local_first ? Outcome::Detail::local
                                             : Outcome::Detail::derived;
  outcome.detail = Outcome::detail_for(kind, stale);

  if (!reuse_page) {
    auto body = cache::slice_page(page.query.skip, page.query.limit, elements_by_window);
    if (!body) co_return invalid_window(clock_.wall_now());
    auto derived = std::make_shared<cache::Entry>();
    derived->status = 200;
    derived->stored_at = parts.front().entry->stored_at;
    derived->fresh_until = parts.front().entry->fresh_until;
    derived->stale_until = parts.front().entry->stale_until;
    for (const Served& part : parts) {
      derived->stored_at = std::min(derived->stored_at, part.entry->stored_at);
      derived->fresh_until = std::min(derived->fresh_until, part.entry->fresh_until);
      derived->stale_until = std::min(derived->stale_until, part.entry->stale_until);
    }
    derived->etag = cache::strong_etag(*body);
    derived->hold = hold;
    cache::codings_on_demand(*derived);
    derived->body = std::move(*body);
    // Kept even when cut from stale windows: it is served only while fresh, or again for
    // the very same window (above), never past its windows' stale_until.
    cache_.store_local(page_key, derived);
    if (metrics_) metrics_->derived_page();
    cut = std::move(derived);
  }
  served.entry = std::move(cut);
  served.outcome = outcome;
  served.now = clock_.wall_now();
  co_return served;
}

}  // namespace wg::serving
