#pragma once

#include <chrono>
#include <memory>
#include <system_error>

#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/tracing/trace_context.hpp"

namespace wg::serving {

// What one trip upstream produced.
struct FetchOutcome {
  // A storable answer: 200 data, or a negative entry (upstream's 404/400 for an unknown
  // widget). Null when the trip failed.
  std::shared_ptr<const cache::Entry> entry;
  std::error_code error;  // why there is no entry: wg::errc upstream_*, quota_exhausted...
  bool stored = false;    // the entry reached the shared cache
  bool theirs = false;    // another worker's or instance's fetch stored it while this one waited
  // The answer took more than half away and was held back (docs/freshness.md): `entry` is the
  // adopted copy kept, or the answer kept provisionally, marked with its hold.
  bool held_back = false;
  bool unchanged = false;   // adopted, with the very bytes of the copy it replaced
  double upstream_ms = -1;  // how long the upstream exchange took; < 0 when none was made
  std::chrono::seconds retry_after{0};  // for the client, when `error` asks it to wait
  // The upstream fetch's span (none when no trip was made): coalesced waiters link to it.
  tracing::TraceId fetch_trace;
  tracing::SpanId fetch_span;
};

}  // namespace wg::serving
