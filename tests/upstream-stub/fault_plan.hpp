#pragma once
// The stub's test controls: which fault the next API requests get, and an added latency.
// Shared by every session; the plan sits behind a mutex (never held during I/O), the latency is
// an atomic.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace wg::stub {

enum class FaultMode {
  none,
  status500,     // 500 with a JSON error body
  status503,     // 503 with a JSON error body
  status429,     // 429 with a JSON error body and Retry-After
  hang,          // read the request, never answer; the socket stays open
  truncate,      // the normal headers (200 for a valid request) with the full Content-Length,
                 // then half the body, then close
  invalid_json,  // 200 with a body that is not JSON (Content-Length matches it)
  close,         // close the connection without any response
  // 200 with a widget body the gateway must refuse (reviews endpoint: as invalid_json):
  widget_no_total,   // the widget without its `totalReviewAmount` member
  widget_bad_total,  // the widget with `"totalReviewAmount":"12"`, a string
  // Well-formed answers a vendor glitch gives (the gateway must not trust them blindly):
  empty_data,         // widget: every count 0 (total, reviewAmount, reviewStars); reviews: []
  widget_contradict,  // widget: totalReviewAmount one more than reviewAmount adds up to
                      // (reviews endpoint: as invalid_json)
  uncounted_source,   // widget: one more `sources` entry, a platform the widget does not link
                      // (no count in reviewAmount, no reviews); reviews: as usual
};

// Which API endpoint a fault applies to; also names the endpoint a request was for.
enum class FaultEndpoint { any, widget, reviews };

// A Retry-After that replaces a status fault's default (status429: "1"; the others: none).
struct RetryAfter {
  std::string verbatim;                      // sent as is, unless empty
  std::optional<std::chrono::seconds> date;  // else an IMF-fixdate this long after Date
};

inline constexpr std::chrono::seconds kMaxRetryAfterDateOffset{10LL * 365 * 24 * 3600};
// The retry_after control parameter: "date:N" (N decimal seconds, negative for a past date,
// |N| <= kMaxRetryAfterDateOffset) or a value to send verbatim (not empty, no control
// characters but tab). nullopt when it is neither.
std::optional<RetryAfter> parse_retry_after(std::string_view text);
// "date:N" or the verbatim value, as parse_retry_after read it.
std::string to_string(const RetryAfter& retry_after);
// Whether `mode` answers with an error status, the only faults that take a Retry-After.
bool takes_retry_after(FaultMode mode);

std::optional<FaultMode> parse_fault_mode(std::string_view text);
std::string_view to_string(FaultMode mode);
std::optional<FaultEndpoint> parse_fault_endpoint(std::string_view text);
std::string_view to_string(FaultEndpoint endpoint);

class FaultPlan {
 public:
  struct Snapshot {
    FaultMode mode = FaultMode::none;
    std::optional<std::uint64_t> remaining;  // nullopt = until cleared
    FaultEndpoint endpoint = FaultEndpoint::any;
    std::optional<RetryAfter> retry_after;  // nullopt = the mode's default
    std::optional<std::string> widget;      // only requests for this widget id; nullopt = all
  };

  // What one request gets.
  struct Fault {
    FaultMode mode = FaultMode::none;
    std::optional<RetryAfter> retry_after;
  };

  // Replaces the plan: the next `count` API requests for `endpoint` (all of them when `count`
  // is nullopt) get `mode`, with `retry_after` if set (the caller checks takes_retry_after).
  // FaultMode::none clears.
  // With `widget`, only requests for that widget id match (and count).
  void set(FaultMode mode, std::optional<std::uint64_t> count, FaultEndpoint endpoint,
           std::optional<RetryAfter> retry_after = std::nullopt,
           std::optional<std::string> widget = std::nullopt);
  // Clears faults and latency.
  void reset();

  // Called once per API request for `endpoint` (widget or reviews) and widget `id`: returns the
  // fault to apply (FaultMode::none if none) and consumes one use of a counted fault.
  Fault take(FaultEndpoint endpoint, std::string_view id = {});
  Snapshot snapshot() const;

  void set_latency(std::chrono::milliseconds latency) { latency_ms_.store(latency.count()); }
  std::chrono::milliseconds latency() const {
    return std::chrono::milliseconds(latency_ms_.load());
  }

 private:
  mutable std::mutex mutex_;
  Snapshot plan_;
  std::atomic<std::chrono::milliseconds::rep> latency_ms_{0};
};

}  // namespace wg::stub
