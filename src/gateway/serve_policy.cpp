#include "serve_policy.hpp"

namespace wg::gateway {

std::string_view detail_of(StaleReason reason) {
  switch (reason) {
    case StaleReason::none:
      return "";
    case StaleReason::while_revalidate:
      return "stale-while-revalidate";
    case StaleReason::if_error:
      return "stale-if-error";
    case StaleReason::quota_exhausted:
      return "quota-exhausted";
    case StaleReason::quota_economy:
      return "quota-economy";
  }
  return "";
}

ServeDecision decide(const cache::Entry* entry, WallTime now, quota::Mode mode,
                     const StaleWindows& windows, bool early_refresh) {
  using Action = ServeDecision::Action;
  if (entry == nullptr || now >= entry->stale_until)
    return {Action::fetch, StaleReason::none, false};

  if (now < entry->fresh_until) {
    const bool refresh = early_refresh && mode == quota::Mode::normal;
    return {refresh ? Action::serve_and_refresh : Action::serve, StaleReason::none, false};
  }
  // Negative entries have no stale window (stale_until == fresh_until), so only data is here.
  switch (mode) {
    case quota::Mode::exhausted:
      return {Action::serve, StaleReason::quota_exhausted, false};
    case quota::Mode::economy:
      return {Action::serve, StaleReason::quota_economy, false};
    case quota::Mode::normal:
      break;
  }
  if (now < entry->fresh_until + windows.while_revalidate) {
    return {Action::serve_and_refresh, StaleReason::while_revalidate, false};
  }
  const bool rescue = now < entry->fresh_until + windows.if_error;
  return {Action::fetch, StaleReason::none, rescue};
}

}  // namespace wg::gateway
