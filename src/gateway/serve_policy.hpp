#pragma once
// What to do with what the cache holds for a key, given the time and the quota mode. Pure: the
// gateway service carries the decision out.
//
//   fresh                          serve; in normal mode maybe refresh early (XFetch)
//   stale, quota exhausted         serve stale (no upstream call is possible)
//   stale, quota economy           serve stale: freshness is extended up to stale_until
//   stale, within swr window       serve stale now and refresh in the background
//   stale, beyond swr              fetch; if upstream fails, serve stale (stale-if-error)
//   nothing usable                 fetch; failures are errors

#include <chrono>

#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/quota/quota_counter.hpp"

namespace wg::gateway {

// Why a stale copy was served; each maps to a Cache-Status detail value.
enum class StaleReason { none, while_revalidate, if_error, quota_exhausted, quota_economy };
std::string_view detail_of(StaleReason reason);

struct StaleWindows {
  std::chrono::milliseconds while_revalidate{0};
  std::chrono::milliseconds if_error{0};
};

struct ServeDecision {
  enum class Action {
    serve,              // answer from the entry
    serve_and_refresh,  // answer from the entry, refresh it in the background
    fetch,              // go upstream now (coalesced); `fallback` says if the entry may rescue
  };
  Action action = Action::fetch;
  StaleReason stale = StaleReason::none;  // for serve*: why the entry is served although stale
  bool fallback = false;                  // for fetch: serve the entry if the fetch fails
};

// `early_refresh` is the XFetch draw for a fresh entry (ignored otherwise).
ServeDecision decide(const cache::Entry* entry, WallTime now, quota::Mode mode,
                     const StaleWindows& windows, bool early_refresh);

}  // namespace wg::gateway
