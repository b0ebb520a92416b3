#pragma once
// A reviews page cut from the aligned 300-review windows that cover it (one or two), each
// window an ordinary key served by the caller's own rules, byte for byte as upstream writes
// pages (cache::slice_page). What the windows show of the list is remembered (ListEnds); a
// window proven empty ends the page; the page is kept in L1 and reused while its window is
// unchanged. The page's outcome is its windows': fetched if any was, stale if any was.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache_tier.hpp"
#include "list_ends.hpp"
#include "served.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::metrics {
class GatewayMetrics;
}

namespace wg::serving {

// Threads: one per worker, on its thread.
class PageDeriver {
 public:
  // One window of a page, its key computed once.
  struct Window {
    std::uint64_t start = 0;
    api::ApiRequest request;  // limit 300, skip `start`, the page's widget and type
    std::string key;
  };
  // The windows covering `page`, in order.
  static std::vector<Window> windows_of(const api::ApiRequest& page);

  // Serves one window as its own key (the caller's rules: L1, Redis, proof, fetch).
  using ServeWindow = std::function<boost::asio::awaitable<Served>(const Window&)>;

  PageDeriver(CacheTier& cache, ListEnds* list_ends, Clock& clock, metrics::GatewayMetrics* metrics)
      : cache_(cache), list_ends_(list_ends), clock_(clock), metrics_(metrics) {}

  // Serves the windows of `page`'s list from `from` up to `until` (exclusive), in order, and
  // records what each shows, until one is not full or is proven empty: that one ends the list.
  // Nullopt when the walk went as far as it had to; else the window's answer that stopped it
  // (a failure, no entry; or an unknown widget's 400).
  boost::asio::awaitable<std::optional<Served>> walk(const api::ApiRequest& page,
                                                     std::uint64_t from, std::uint64_t until,
                                                     const ServeWindow& serve_window);

  // The page `page_key` of `page`, from `windows`. A window's failure comes back as its answer
  // (no entry).
  boost::asio::awaitable<Served> derive(const api::ApiRequest& page, const std::string& page_key,
                                        const std::vector<Window>& windows,
                                        const ServeWindow& serve_window);

 private:
  CacheTier& cache_;
  ListEnds* list_ends_;
  Clock& clock_;
  metrics::GatewayMetrics* metrics_;
};

}  // namespace wg::serving
