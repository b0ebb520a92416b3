#pragma once
// What the stub answers, with no I/O: routes a request (method + target) to the API or the test
// controls and returns the reply plus the fault the I/O shell must act out. Counts API requests.
//
// Choices where the upstream spec is silent (see also dataset.hpp):
// - reviews: `limit` must be a non-negative decimal integer <= 300 (missing, empty, negative,
//   fractional or larger -> 400); limit=0 -> `[]`; `skip` defaults to 0, must be a non-negative
//   decimal integer (anything else -> 400); skip at or past the end -> `[]`; `type` must be one
//   of the nine codes (empty -> 400). Checks run in that order, then the widget id (unknown ->
//   400). The first occurrence of a repeated parameter wins.
// - Error bodies: {"statusCode":N,"message":"...","error":"<reason phrase>"}.
// - Any request whose path is an API path is counted and may be faulted, whatever its method;
//   the method check (GET/HEAD, else 405) comes after the fault. widget_no_total and
//   widget_bad_total alter the normal reply's widget body (a 405 or an unknown id's 404 stays
//   as it is); on the reviews endpoint they act as invalid_json.
// - Other paths -> 404 (not counted). Test controls live under /__stub/ and are never counted,
//   delayed or faulted.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>

#include "upstream-stub/dataset.hpp"
#include "upstream-stub/fault_plan.hpp"

namespace wg::stub {

struct StubStats {
  std::uint64_t widget = 0;       // API requests on the widget data path
  std::uint64_t reviews = 0;      // API requests on the reviews path
  std::uint64_t total = 0;        // widget + reviews
  std::uint64_t connections = 0;  // connections accepted
};

struct StubReply {
  boost::beast::http::status status = boost::beast::http::status::ok;
  // Always JSON unless fault == invalid_json (or a widget_* fault on the reviews endpoint).
  std::string body;
  // Extra response headers (e.g. Allow, Retry-After).
  std::vector<std::pair<std::string_view, std::string>> headers;
  // Retry-After as an IMF-fixdate this long after the response's Date. The I/O shell writes
  // both from one reading of its clock, so they differ by exactly this much.
  std::optional<std::chrono::seconds> retry_after_date;
  // A 200 on an API route: the I/O shell adds Cache-Control and Expires when the stub has an
  // expiry moment (StubOptions::expires_at).
  bool cacheable = false;
  // What the I/O shell does instead of (or on the way to) sending the reply.
  FaultMode fault = FaultMode::none;
  std::chrono::milliseconds delay{0};  // wait this long before acting
};

class StubHandler {
 public:
  // `dataset` must outlive the handler.
  explicit StubHandler(const Dataset& dataset) : dataset_(dataset) {}

  // Thread-safe. `traceparent`: the request's header ("" when absent), remembered for API
  // requests (the last kMaxTraceparents, GET /__stub/traceparents).
  StubReply handle(boost::beast::http::verb method, std::string_view target,
                   std::string_view traceparent = {});
  static constexpr std::size_t kMaxTraceparents = 256;

  void note_connection() { connections_.fetch_add(1, std::memory_order_relaxed); }
  StubStats stats() const;
  FaultPlan& faults() { return faults_; }
  // The vendor's daily refresh (POST /__stub/day?n=N): every widget renders as of data day N.
  void set_day(std::int64_t day) { dataset_.set_day(day); }

 private:
  StubReply widget(std::string_view id);
  // The first platform widget `id` does not link (for FaultMode::uncounted_source).
  std::string_view unlinked_platform(std::string_view id) const;
  StubReply reviews(std::string_view id, std::string_view target);
  StubReply control(boost::beast::http::verb method, std::string_view path,
                    std::string_view target);

  const Dataset& dataset_;
  FaultPlan faults_;
  std::atomic<std::uint64_t> widget_{0};
  std::atomic<std::uint64_t> reviews_{0};
  std::atomic<std::uint64_t> connections_{0};
  std::mutex traceparents_mutex_;
  std::deque<std::string> traceparents_;  // oldest first
};

// A JSON error reply {"statusCode":N,"message":...,"error":...}.
StubReply error_reply(boost::beast::http::status status, std::string_view message);

}  // namespace wg::stub
