#pragma once
// What the serving core works with, built from the configuration at start and at each reload.
// Requests in flight keep the settings they started with (shared_ptr), so a reload never
// changes the rules under a request.

#include <chrono>
#include <cstdint>
#include <memory>

#include "serve_policy.hpp"
#include "upstream_fetcher.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::serving {

// What one shared fetch of a key needs (SharedFetch).
struct SharedFetchSettings {
  FetchSettings fetch;
  // Longest wait for a fetch of the key already under way (in this process or elsewhere).
  std::chrono::milliseconds wait_timeout{0};
  std::chrono::milliseconds lock_ttl{0};  // the fetch lock's
  std::uint64_t widget_slack = 2;         // the per-widget guard (quota.widget_slack)
  std::chrono::milliseconds widget_pace{std::chrono::minutes(5)};
};

struct ServiceSettings {
  SharedFetchSettings shared;
  StaleWindows stale;
  bool derive_pages = true;
  bool all_known = false;               // an allowlist is set: every id that gets here is known
  bool empty_reviews_on_error = false;  // cache.empty_reviews_on_error
};
using SettingsPtr = std::shared_ptr<const ServiceSettings>;

SettingsPtr settings_from(const config::Config& config);

// The shared-fetch part of `settings`, kept alive by it.
inline std::shared_ptr<const SharedFetchSettings> shared_part(const SettingsPtr& settings) {
  return {settings, &settings->shared};
}

}  // namespace wg::serving
