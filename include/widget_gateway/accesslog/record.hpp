#pragma once
// One access log record and its JSON line. Formatting is a pure function so that it runs on
// the calling (io) thread and can be tested without a sink.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "widget_gateway/api/widget_summary.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::accesslog {

struct Record {
  WallTime time;
  std::string_view client;  // peer address (or the forwarded one, from a trusted proxy)
  std::string_view method;
  std::string_view route;   // "widget", "reviews", "healthz", ...
  std::string_view widget;  // empty: none (written as null)
  unsigned status = 0;
  std::string_view cache;   // hit, miss, collapsed, stale, derived, local, none
  std::string_view reason;  // why the gateway refused it (wg_refusals_total's); empty: not written
  std::optional<double> upstream_ms;  // nullopt: no upstream call
  std::uint64_t bytes = 0;            // bytes sent to the client, head included
  double duration_ms = 0.0;
  std::string_view trace_id;  // 32 hex characters (W3C Trace Context); empty: none (null)
  // What a replay of the log needs (widget-gateway --what-if): a reviews request's normalized
  // query (what its cache key is built from; `type` empty: none) and, for widget data answered
  // with upstream's data, its counts as a JSON object (counts_json; empty: not written).
  std::optional<std::uint32_t> limit;
  std::uint64_t skip = 0;
  std::string_view type;
  std::string_view counts;
  // The share of requests the log keeps (log.sample), written when below 1: a replay scales
  // its figures by it or refuses, and says which.
  std::optional<double> sample;
};

// A widget's counts as a replay reads them back:
// {"total":N,"reviewAmount":{"yaSprav":n,...},"sources":["yaSprav",...],"consistent":true}.
std::string counts_json(const api::WidgetSummary& widget);

// Longest client, method, route, widget or cache text written; longer ones are cut (at a
// character boundary) so that one request cannot make a line, or the queue, arbitrarily large.
inline constexpr std::size_t kMaxFieldBytes = 256;

// Appends one line, newline included:
// {"time":"2024-05-01T12:34:56.789Z","client":"...","method":"GET","route":"widget",
//  "widget":"abc","status":200,"cache":"hit","upstream_ms":null,"bytes":512,"duration_ms":0.25,
//  "trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}
// A refusal has "reason" after "cache" ("cache":"none","reason":"circuit_open",...); other
// answers have no such member. After them, when set: "limit":20,"skip":0,"type":null (a reviews
// request), "counts":{...} (widget data), "sample":0.1.
// Strings are escaped for JSON; bytes that are not valid UTF-8 become U+FFFD.
void append_line(std::string& out, const Record& record);

// RFC 3339 in UTC with milliseconds: 2024-05-01T12:34:56.789Z.
void append_time(std::string& out, WallTime time);

}  // namespace wg::accesslog
