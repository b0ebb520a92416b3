#include "wg-bench/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "widget_gateway/common/json_writer.hpp"

namespace wg::bench {
namespace {

std::string number(double value, int decimals = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string micros(std::uint64_t ns) {
  return number(static_cast<double>(ns) / 1000.0, 1);
}

struct Percentile {
  const char* name;
  double q;
};
constexpr Percentile kPercentiles[] = {
    {"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p99_9", 0.999}};

void append_strings(std::string& out, const std::vector<std::string>& items) {
  out += "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    json::append_string(out, items[i]);
  }
  out += "]";
}

// The per-second series, with what the profile offered in each second (open loop) and where
// the measured period lies.
void append_series(std::string& out, const ReportContext& c, const LoadResult& r) {
  const auto& series = r.stats.series;
  const LoadProfile profile = load_profile(c.load);
  const bool open = c.load.mode == LoadMode::open && c.load.requests == 0;
  const double end = r.warmup_seconds + r.measured_seconds;
  const bool slow = c.load.slow_above.count() > 0;
  out +=
      "  \"time_series\": {\"interval_s\": 1, \"measured_from_s\": " + number(r.warmup_seconds, 3) +
      ", \"measured_until_s\": " + number(end, 3) + ", \"slow_above_us\": " +
      (slow ? number(static_cast<double>(c.load.slow_above.count()) * 1000.0, 1) : "null") +
      ", \"truncated\": " + (series.truncated() ? "true" : "false") + ", \"seconds\": [";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const SecondStats& s = series.second(i);
    const double from = static_cast<double>(i), to = std::min(from + 1, end);
    out += i ? ",\n    " : "\n    ";
    out += "{\"t\": " + std::to_string(i);
    if (open) {
      out += ", \"offered\": " + number(profile.offered_between(from, to), 0);
    }
    out += ", \"sent\": " + std::to_string(s.sent) + ", \"late\": " + std::to_string(s.late) +
           ", \"responses\": " + std::to_string(s.responses) +
           ", \"errors\": " + std::to_string(s.errors);
    if (slow) out += ", \"slow\": " + std::to_string(s.slow);
    out += ", \"p50_us\": " + micros(s.latency.value_at(0.5)) +
           ", \"p99_us\": " + micros(s.latency.value_at(0.99)) +
           ", \"max_us\": " + micros(s.latency.max()) + "}";
  }
  out += series.size() ? "\n  ]},\n" : "]},\n";
}

// The same series a minute at a time, each minute's histogram merged from its seconds: exact
// percentiles per minute for long runs (the soak plots them), where seconds are too noisy.
// `slow`: the run counted slow answers (--slow-above).
void append_minutes(std::string& out, const TimeSeries& series, bool slow) {
  constexpr std::size_t kSecondsPerMinute = 60;
  out += "  \"minutes\": [";
  for (std::size_t first = 0; first < series.size(); first += kSecondsPerMinute) {
    SecondStats minute;
    const std::size_t last = std::min(series.size(), first + kSecondsPerMinute);
    for (std::size_t i = first; i < last; ++i) minute.merge(series.second(i));
    out += first ? ",\n    " : "\n    ";
    out += "{\"minute\": " + std::to_string(first / kSecondsPerMinute) +
           ", \"seconds\": " + std::to_string(last - first) +
           ", \"responses\": " + std::to_string(minute.responses) +
           ", \"errors\": " + std::to_string(minute.errors);
    if (slow) out += ", \"slow\": " + std::to_string(minute.slow);
    out += ", \"p50_us\": " + micros(minute.latency.value_at(0.5)) +
           ", \"p99_us\": " + micros(minute.latency.value_at(0.99)) +
           ", \"max_us\": " + micros(minute.latency.max()) + "}";
  }
  out += series.size() ? "\n  ],\n" : "],\n";
}

// Every non-empty bucket as [lowest, highest, count], nanoseconds.
void append_histogram(std::string& out, const Histogram& h) {
  out += "  \"histogram\": {\"unit\": \"ns\", \"sub_bucket_bits\": " +
         std::to_string(Histogram::kSubBucketBits) +
         ", \"relative_error\": " + number(1.0 / static_cast<double>(Histogram::kHalf), 5) +
         ", \"count\": " + std::to_string(h.count()) + ", \"buckets\": [";
  bool first = true;
  for (std::size_t i = 0; i < Histogram::kBucketCount; ++i) {
    const auto n = h.count_at(i);
    if (n == 0) continue;
    out += first ? "" : ", ";
    first = false;
    out += "[" + std::to_string(Histogram::bucket_lowest(i)) + ", " +
           std::to_string(Histogram::bucket_highest(i)) + ", " + std::to_string(n) + "]";
  }
  out += "]}\n";
}

// Each role's measured requests, answers, failures and latency: the visitors' figures apart
// from the walker's (request_mix.hpp, Role).
void append_roles(std::string& out, const RunStats& s) {
  out += "  \"roles\": {";
  for (std::size_t i = 0; i < s.roles.size(); ++i) {
    const RoleStats& r = s.roles[i];
    out += i ? ",\n    \"" : "\n    \"";
    out += std::string(to_string(static_cast<Role>(i))) +
           "\": {\"requests\": " + std::to_string(r.requests) +
           ", \"responses\": " + std::to_string(r.responses) +
           ", \"errors\": " + std::to_string(r.errors) +
           ", \"unexpected_status\": " + std::to_string(r.unexpected_status) +
           ", \"latency_us\": {\"min\": " + micros(r.latency.min());
    for (const auto& p : kPercentiles) {
      out += ", \"" + std::string(p.name) + "\": " + micros(r.latency.value_at(p.q));
    }
    out += ", \"max\": " + micros(r.latency.max()) + "}}";
  }
  out += "\n  },\n";
}

// A role's latency at q in microseconds, or "-" when it got no answer.
std::string role_micros(const RoleStats& role, double q) {
  return role.responses ? micros(role.latency.value_at(q)) : "-";
}

}  // namespace

std::string to_json(const ReportContext& c, const LoadResult& r, const RunFigures& f,
                    const Verdict& v) {
  const auto& s = r.stats;
  std::string out = "{\n  \"tool\": \"wg-bench\",\n  \"label\": ";
  json::append_string(out, c.label);
  out += ",\n  \"scenario\": ";
  json::append_string(out, c.scenario);
  out += ",\n  \"target\": ";
  json::append_string(out, c.target);
  out += ",\n  \"protocol\": ";
  json::append_string(out, c.protocol);
  out += ",\n  \"load\": {\"mode\": ";
  json::append_string(out, to_string(c.load.mode));
  out += ", \"connections\": " + std::to_string(c.load.connections);
  out += ", \"threads\": " + std::to_string(c.load.threads);
  out += ", \"rate\": " + number(c.load.rate, 1);
  out += ", \"duration_s\": " + number(std::chrono::duration<double>(c.load.duration).count(), 3);
  out += ", \"warmup_s\": " + number(r.warmup_seconds, 3);
  out += ", \"ramp\": [";
  for (std::size_t i = 0; i < c.load.ramp.size(); ++i) {
    out += (i ? ", " : "") + std::string("{\"target\": ") + number(c.load.ramp[i].target, 1) +
           ", \"duration_s\": " +
           number(std::chrono::duration<double>(c.load.ramp[i].duration).count(), 3) + "}";
  }
  out += "]";
  out += ", \"requests_limit\": " + std::to_string(c.load.requests);
  out += ", \"timeout_s\": " + number(std::chrono::duration<double>(c.load.timeout).count(), 3);
  out += ", \"seed\": " + std::to_string(c.seed);
  out += ", \"pool\": " + std::to_string(c.pool) + "},\n";
  out += "  \"exit_status\": " + std::to_string(static_cast<int>(v.status)) + ",\n";
  out += "  \"warnings\": ";
  append_strings(out, v.warnings);
  out += ",\n  \"thresholds_crossed\": ";
  append_strings(out, v.crossed);
  out += ",\n  \"measured_seconds\": " + number(r.measured_seconds, 3) + ",\n";
  out += "  \"elapsed_seconds\": " + number(r.elapsed_seconds, 3) + ",\n";
  out += "  \"requests\": " + std::to_string(s.requests) + ",\n";
  out += "  \"responses\": " + std::to_string(s.responses) + ",\n";
  out += "  \"expected_answers\": " + std::to_string(f.expected_answers) + ",\n";
  out += "  \"throughput_rps\": " + number(f.achieved_rps, 1) + ",\n";
  out += "  \"offered_rps\": " + (f.open_loop ? number(f.offered_rps, 1) : "null") + ",\n";
  out += "  \"rate_ratio\": " + (f.open_loop ? number(f.rate_ratio, 4) : "null") + ",\n";
  out += "  \"latency_us\": {\"count\": " + std::to_string(s.latency.count());
  out += ", \"min\": " + micros(s.latency.min());
  out += ", \"mean\": " + number(s.latency.mean() / 1000.0, 1);
  for (const auto& p : kPercentiles) {
    out += ", \"" + std::string(p.name) + "\": " + micros(s.latency.value_at(p.q));
  }
  out += ", \"max\": " + micros(s.latency.max()) + ", \"measured_from\": ";
  json::append_string(out, f.open_loop ? "intended send time" : "actual send time");
  out += "},\n  \"status\": {";
  bool first = true;
  for (std::size_t code = 0; code < s.status.size(); ++code) {
    if (s.status[code] == 0) continue;
    out += first ? "" : ", ";
    out += "\"" + std::to_string(code) + "\": " + std::to_string(s.status[code]);
    first = false;
  }
  out += "},\n  \"unexpected_status\": " + std::to_string(s.unexpected_status) + ",\n";
  out += "  \"unexpected_by_status\": {";
  bool first_code = true;
  for (std::size_t code = 0; code < s.unexpected_by_status.size(); ++code) {
    if (s.unexpected_by_status[code] == 0) continue;
    out += (first_code ? "\"" : ", \"") + std::to_string(code) +
           "\": " + std::to_string(s.unexpected_by_status[code]);
    first_code = false;
  }
  out += "},\n";
  out += "  \"errors\": {";
  for (std::size_t k = 0; k < kErrorKinds; ++k) {
    out += k == 0 ? "\"" : ", \"";
    out += std::string(to_string(static_cast<ErrorKind>(k))) + "\": " + std::to_string(s.errors[k]);
  }
  out += "},\n  \"errors_total\": " + std::to_string(s.error_total()) + ",\n";
  out += "  \"bytes\": {\"sent\": " + std::to_string(s.bytes_sent) +
         ", \"received\": " + std::to_string(s.bytes_received) + "},\n";
  out += "  \"whole_run\": {\"requests\": " + std::to_string(s.all_requests) +
         ", \"responses\": " + std::to_string(s.all_responses) +
         ", \"connections_opened\": " + std::to_string(s.connections_opened) +
         ", \"server_closes\": " + std::to_string(s.server_closes) + "},\n";
  out += "  \"open_loop\": {\"sends\": " + std::to_string(s.sends) +
         ", \"late_sends\": " + std::to_string(s.late_sends) +
         ", \"unsent\": " + std::to_string(f.unsent) +
         ", \"max_lateness_us\": " + micros(s.max_lateness_ns) + "},\n";
  append_roles(out, s);
  append_series(out, c, r);
  append_minutes(out, r.stats.series, c.load.slow_above.count() > 0);
  append_histogram(out, s.latency);
  out += "}\n";
  return out;
}

std::string tsv_header() {
  return "label\tresponses\trps\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\terrors\tunexpected\t"
         "all_responses\tbytes_received\tmode\toffered_rps\tlate_sends\tunsent\texit_status\t"
         "visitors_p99_us\twalker_responses\twalker_p99_us\n";
}

std::string to_tsv_line(const ReportContext& c, const LoadResult& r, const RunFigures& f,
                        const Verdict& v) {
  const auto& s = r.stats;
  std::string out = c.label;
  out += "\t" + std::to_string(s.responses) + "\t" + number(f.achieved_rps, 1);
  for (const auto& p : kPercentiles) out += "\t" + micros(s.latency.value_at(p.q));
  out += "\t" + micros(s.latency.max());
  out += "\t" + std::to_string(s.error_total()) + "\t" + std::to_string(s.unexpected_status);
  out += "\t" + std::to_string(s.all_responses) + "\t" + std::to_string(s.bytes_received);
  out += "\t" + std::string(to_string(c.load.mode)) + "\t" +
         (f.open_loop ? number(f.offered_rps, 1) : "-") + "\t" + std::to_string(s.late_sends) +
         "\t" + std::to_string(f.unsent) + "\t" + std::to_string(static_cast<int>(v.status));
  const RoleStats& visitors = s.roles[static_cast<std::size_t>(Role::visitor)];
  const RoleStats& walker = s.roles[static_cast<std::size_t>(Role::walker)];
  out += "\t" + role_micros(visitors, 0.99) + "\t" + std::to_string(walker.responses) + "\t" +
         role_micros(walker, 0.99) + "\n";
  return out;
}

std::string human_summary(const ReportContext& c, const LoadResult& r, const RunFigures& f,
                          const Verdict& v) {
  const auto& s = r.stats;
  std::string out = "wg-bench " + c.label + " (" + c.scenario + ", " +
                    std::string(to_string(c.load.mode)) + " loop, " +
                    std::to_string(c.load.connections) + " connections, " + c.protocol + "): ";
  out += std::to_string(s.responses) + " answers";
  if (f.open_loop) {
    out += " in " + number(r.elapsed_seconds, 2) + " s (" + number(r.measured_seconds, 2) +
           " s planned) = " + number(f.achieved_rps, 0) + " req/s achieved of " +
           number(f.offered_rps, 0) + " offered";
  } else {
    out += " in " + number(r.measured_seconds, 2) + " s = " + number(f.achieved_rps, 0) + " req/s";
  }
  out += "; latency us";
  if (f.open_loop) out += " (from the intended send time)";
  for (const auto& p : kPercentiles)
    out += " " + std::string(p.name) + "=" + micros(s.latency.value_at(p.q));
  out += " max=" + micros(s.latency.max());
  // "errors" as --fail-if counts them: requests without an expected answer.
  out += "; errors " + std::to_string(f.failed) + " (no answer " +
         std::to_string(f.transport_errors) + ", unexpected status " + std::to_string(f.unexpected);
  if (f.unexpected > 0) out += ": " + status_counts(s.unexpected_by_status);
  out += ")\n";
  if (s.roles[static_cast<std::size_t>(Role::walker)].requests > 0) {
    for (std::size_t i = 0; i < s.roles.size(); ++i) {
      const RoleStats& role = s.roles[i];
      out += "  " + std::string(to_string(static_cast<Role>(i))) + ": " +
             std::to_string(role.responses) + " answers; latency us";
      for (const auto& p : kPercentiles)
        out += " " + std::string(p.name) + "=" + role_micros(role, p.q);
      out += " max=" + (role.responses ? micros(role.latency.max()) : "-") + "; errors " +
             std::to_string(role.errors + role.unexpected_status) + " (no answer " +
             std::to_string(role.errors) + ", unexpected status " +
             std::to_string(role.unexpected_status) + ")\n";
    }
  }
  for (const auto& w : v.warnings) out += "wg-bench: warning: " + w + "\n";
  for (const auto& x : v.crossed) out += "wg-bench: --fail-if condition held: " + x + "\n";
  return out;
}

std::string to_hgrm(const Histogram& h) {
  constexpr double kScale = 1e6;  // nanoseconds → milliseconds
  constexpr int kTicksPerHalfDistance = 5;
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
                "1/(1-Percentile)");
  out += line;
  const std::uint64_t total = h.count();
  const auto value_of = [&](std::size_t i) {
    return static_cast<double>(std::min(Histogram::bucket_highest(i), h.max())) / kScale;
  };
  double level = 0;  // the next percentile to report, in percent
  std::uint64_t seen = 0;
  std::size_t last_bucket = 0;
  for (std::size_t i = 0; i < Histogram::kBucketCount && seen < total; ++i) {
    const auto n = h.count_at(i);
    if (n == 0) continue;
    seen += n;
    last_bucket = i;
    while (100.0 * static_cast<double>(seen) / static_cast<double>(total) >= level &&
           level < 100.0) {
      std::snprintf(line, sizeof line, "%12.3f %2.12f %10llu %14.2f\n", value_of(i), level / 100,
                    static_cast<unsigned long long>(seen), 1 / (1 - level / 100));
      out += line;
      const auto halvings = static_cast<long long>(std::log(100.0 / (100.0 - level)) / std::log(2));
      const double ticks = kTicksPerHalfDistance * std::pow(2.0, static_cast<double>(halvings + 1));
      level += 100.0 / ticks;
      // As HdrHistogram does: the bucket holding the last value reports one level, then 100 %
      // (the levels approach 100 % without reaching it).
      if (seen == total) break;
    }
  }
  if (total > 0) {
    std::snprintf(line, sizeof line, "%12.3f %2.12f %10llu\n", value_of(last_bucket), 1.0,
                  static_cast<unsigned long long>(total));
    out += line;
  }
  std::snprintf(line, sizeof line, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n",
                h.mean() / kScale, h.stddev() / kScale);
  out += line;
  std::snprintf(line, sizeof line, "#[Max     = %12.3f, Total count    = %12llu]\n",
                static_cast<double>(h.max()) / kScale, static_cast<unsigned long long>(total));
  out += line;
  std::snprintf(line, sizeof line, "#[Buckets = %12zu, SubBuckets     = %12llu]\n",
                Histogram::kBucketCount / Histogram::kHalf,
                static_cast<unsigned long long>(2 * Histogram::kHalf));
  out += line;
  return out;
}

}  // namespace wg::bench
