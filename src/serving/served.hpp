#pragma once
// The answer to one API request (or to one key of it), as the serving core produced it.

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include "serve_policy.hpp"
#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::serving {

struct Served {
  std::shared_ptr<const cache::Entry> entry;  // null when `error` is set
  Outcome outcome;                            // how `entry` was produced
  std::error_code upstream_error;  // with a stale-if-error answer or an error: what failed
  double upstream_ms = -1;         // this request's own upstream exchange; < 0 when none
  api::ErrorCode error = api::ErrorCode::upstream_error;
  std::string_view message;  // with `error`: why, when the default message does not say; static
  // With `error`: the refusal's reason when the gateway refused it itself (failure_answer).
  std::optional<metrics::RefusalReason> refusal;
  RequestFacts::Failure failure = RequestFacts::Failure::none;  // with `error`: its class
  bool proven = false;  // answered from what the widget data or the windows prove (local)
  std::chrono::seconds retry_after{0};  // for quota_exhausted and rate_limited
  WallTime now{};
  bool ok() const { return entry != nullptr; }
};

}  // namespace wg::serving
