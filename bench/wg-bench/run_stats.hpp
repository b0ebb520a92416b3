#pragma once
// What one load run measured. Each io thread fills its own RunStats; they are merged at the
// end, so the hot path never shares a cache line with another thread.
//
// Accounting, which the JSON report and the tests rely on:
//   requests   = responses + sum(errors)        (every measured attempt ends exactly one way)
//   responses  = sum(status)
//   unexpected_status counts responses (a subset), not errors.

#include <array>
#include <cstdint>
#include <string_view>

#include "wg-bench/histogram.hpp"
#include "wg-bench/time_series.hpp"

namespace wg::bench {

enum class ErrorKind {
  connect,  // TCP connect failed or timed out
  write,    // the request could not be written
  timeout,  // no complete answer within the request timeout
  closed,   // the peer closed or reset the connection before a complete answer
  parse,    // the answer was not valid HTTP/1.1
  read,     // another read error
  unsent,   // open loop: intended in the measured period but never sent (run ended first)
  count_
};
constexpr std::size_t kErrorKinds = static_cast<std::size_t>(ErrorKind::count_);
std::string_view to_string(ErrorKind kind);

// One role's share of the measured requests (request_mix.hpp, Role): what its own answers took.
// Requests that were never sent (open loop, unsent) belong to no role.
struct RoleStats {
  Histogram latency;  // nanoseconds, measured responses only
  std::uint64_t requests = 0;
  std::uint64_t responses = 0;
  std::uint64_t errors = 0;  // transport errors
  std::uint64_t unexpected_status = 0;

  void merge(const RoleStats& other);
};

struct RunStats {
  Histogram latency;  // nanoseconds, measured responses only
  std::uint64_t requests = 0;
  std::uint64_t responses = 0;
  std::array<std::uint64_t, 600> status{};  // by status code
  std::array<std::uint64_t, kErrorKinds> errors{};
  std::uint64_t unexpected_status = 0;
  std::array<std::uint64_t, 600> unexpected_by_status{};  // of those, by status code
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  // Whole run, warm-up and drain included: what a server and its upstream actually saw.
  std::uint64_t all_requests = 0;
  std::uint64_t all_responses = 0;
  std::uint64_t connections_opened = 0;
  std::uint64_t server_closes = 0;  // answers without keep-alive (not errors)
  // Open loop, measured requests only: how many were written, how many of those more than
  // 1 ms after their intended time, and the worst lateness.
  std::uint64_t sends = 0;
  std::uint64_t late_sends = 0;
  std::uint64_t max_lateness_ns = 0;
  TimeSeries series;  // second by second, the whole run
  // By role (request_mix.hpp, Role): the visitors', then the walker's.
  std::array<RoleStats, 2> roles;

  void record_error(ErrorKind kind, bool measured, std::uint64_t n = 1) {
    all_requests += n;
    if (measured) {
      requests += n;
      errors[static_cast<std::size_t>(kind)] += n;
    }
  }
  // Open loop: measured attempts that never reached the wire (not in all_requests).
  void record_unsent(std::uint64_t n) {
    requests += n;
    errors[static_cast<std::size_t>(ErrorKind::unsent)] += n;
  }
  std::uint64_t error_total() const;
  void merge(const RunStats& other);
};

}  // namespace wg::bench
