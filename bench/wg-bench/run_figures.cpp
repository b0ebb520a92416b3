#include "wg-bench/run_figures.hpp"

#include <algorithm>
#include <cstdio>

namespace wg::bench {
namespace {

// Below this share of late sends an open loop is on time (the odd scheduling hiccup).
constexpr double kLateShareWarning = 0.01;
// Below this ratio of achieved to offered rate the target (or wg-bench) did not keep up.
constexpr double kRateRatioWarning = 0.95;

std::string format(const char* pattern, auto... values) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, pattern, values...);
  return buffer;
}

double share(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

// "404 x 120, 400 x 3": the statuses answered, most frequent first (at most 4).
}  // namespace

std::string status_counts(const std::array<std::uint64_t, 600>& by_status, std::size_t most) {
  std::vector<std::pair<std::uint64_t, std::size_t>> seen;
  for (std::size_t code = 0; code < by_status.size(); ++code) {
    if (by_status[code] != 0) seen.emplace_back(by_status[code], code);
  }
  std::sort(seen.rbegin(), seen.rend());
  std::string out;
  for (std::size_t i = 0; i < seen.size() && i < most; ++i) {
    out += (i ? ", " : "") + std::to_string(seen[i].second) + " x " + std::to_string(seen[i].first);
  }
  if (seen.size() > most) out += ", ...";
  return out;
}

RunFigures figures_of(const LoadResult& result, LoadMode mode) {
  const RunStats& s = result.stats;
  RunFigures f;
  f.open_loop = mode == LoadMode::open;
  f.measured_seconds = result.measured_seconds;
  f.elapsed_seconds = result.elapsed_seconds;
  // Closed loop: requests started in the measured period over its length (those still in
  // flight at its end balance those that were at its start). Open loop: a target that fell
  // behind is still answering after the planned end, and that time counts.
  const double seconds = f.open_loop ? result.elapsed_seconds : result.measured_seconds;
  f.achieved_rps = seconds > 0 ? static_cast<double>(s.responses) / seconds : 0;
  if (f.open_loop && result.measured_seconds > 0 && result.intended_requests > 0) {
    f.offered_rps = result.intended_requests / result.measured_seconds;
    f.rate_ratio = f.achieved_rps / f.offered_rps;
  }
  f.requests = s.requests;
  f.responses = s.responses;
  f.unexpected = s.unexpected_status;
  f.expected_answers = s.responses - s.unexpected_status;
  f.transport_errors = s.error_total();
  f.failed = f.transport_errors + f.unexpected;
  f.connect_errors = s.errors[static_cast<std::size_t>(ErrorKind::connect)];
  f.sends = s.sends;
  f.late_sends = s.late_sends;
  f.unsent = s.errors[static_cast<std::size_t>(ErrorKind::unsent)];
  f.max_lateness_ms = static_cast<double>(s.max_lateness_ns) / 1e6;
  f.latency = &s.latency;
  return f;
}

Assessment assess(const RunFigures& f, const RunStats& stats) {
  Assessment a;
  auto worst = [&](ExitStatus status) {
    if (a.status == ExitStatus::ok || static_cast<int>(status) < static_cast<int>(a.status)) {
      a.status = status;
    }
  };
  if (f.connect_errors > 0) {
    a.warnings.push_back(format("%llu connection attempts to the target failed",
                                static_cast<unsigned long long>(f.connect_errors)));
    worst(ExitStatus::connection_failed);
  }
  if (f.requests == 0) {
    a.warnings.push_back("no request fell in the measured period");
    worst(ExitStatus::no_valid_answer);
  } else if (f.expected_answers == 0) {
    std::string why = "no measured request got an answer it expected";
    if (f.responses > 0) {
      why +=
          " (statuses: " + status_counts(stats.status) + "; are the widget ids right? see --ids)";
    }
    a.warnings.push_back(why);
    worst(ExitStatus::no_valid_answer);
  }
  if (f.open_loop) {
    if (f.rate_ratio > 0 && f.rate_ratio < kRateRatioWarning) {
      a.warnings.push_back(format(
          "achieved %.0f req/s of the %.0f offered (%.2f): the target or this load generator did "
          "not keep up, the run took %.2f s instead of %.2f s",
          f.achieved_rps, f.offered_rps, f.rate_ratio, f.elapsed_seconds, f.measured_seconds));
    }
    if (share(f.late_sends, f.sends) > kLateShareWarning) {
      a.warnings.push_back(format(
          "%llu of %llu requests (%.1f %%) were sent more than 1 ms after their intended time "
          "(worst %.1f ms); their latency counts from the intended time",
          static_cast<unsigned long long>(f.late_sends), static_cast<unsigned long long>(f.sends),
          100 * share(f.late_sends, f.sends), f.max_lateness_ms));
    }
    if (f.unsent > 0) {
      a.warnings.push_back(format(
          "%llu requests intended in the measured period were never sent (the run ended first)",
          static_cast<unsigned long long>(f.unsent)));
    }
  }
  const std::uint64_t other_errors = f.transport_errors - f.connect_errors - f.unsent;
  if (other_errors > 0) {
    a.warnings.push_back(
        format("%llu requests failed without an answer (timeouts, closed "
               "connections, bad answers)",
               static_cast<unsigned long long>(other_errors)));
  }
  if (f.unexpected > 0 && f.expected_answers > 0) {
    a.warnings.push_back(format("%llu answers had a status the request did not expect (%s)",
                                static_cast<unsigned long long>(f.unexpected),
                                status_counts(stats.unexpected_by_status).c_str()));
  }
  if (stats.series.truncated()) {
    a.warnings.push_back(
        format("the per-second series keeps the first %zu seconds only", TimeSeries::kMaxSeconds));
  }
  return a;
}

}  // namespace wg::bench
