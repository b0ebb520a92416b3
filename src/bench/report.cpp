#include "bench/report.hpp"

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

double throughput(const LoadResult& r) {
  return r.measured_seconds > 0 ? static_cast<double>(r.stats.responses) / r.measured_seconds : 0;
}

struct Percentile {
  const char* name;
  double q;
};
constexpr Percentile kPercentiles[] = {
    {"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p99_9", 0.999}};

}  // namespace

std::string to_json(const ReportContext& c, const LoadResult& r) {
  const auto& s = r.stats;
  std::string out = "{\n  \"tool\": \"wg-bench\",\n  \"label\": ";
  json::append_string(out, c.label);
  out += ",\n  \"scenario\": ";
  json::append_string(out, c.scenario);
  out += ",\n  \"target\": ";
  json::append_string(out, c.target);
  out += ",\n  \"load\": {\"mode\": ";
  json::append_string(out, to_string(c.load.mode));
  out += ", \"connections\": " + std::to_string(c.load.connections);
  out += ", \"threads\": " + std::to_string(c.load.threads);
  out += ", \"rate\": " + number(c.load.rate, 1);
  out += ", \"duration_s\": " + number(std::chrono::duration<double>(c.load.duration).count(), 3);
  out += ", \"warmup_s\": " + number(std::chrono::duration<double>(c.load.warmup).count(), 3);
  out += ", \"requests_limit\": " + std::to_string(c.load.requests);
  out += ", \"timeout_s\": " + number(std::chrono::duration<double>(c.load.timeout).count(), 3);
  out += ", \"seed\": " + std::to_string(c.seed);
  out += ", \"pool\": " + std::to_string(c.pool) + "},\n";
  out += "  \"measured_seconds\": " + number(r.measured_seconds, 3) + ",\n";
  out += "  \"requests\": " + std::to_string(s.requests) + ",\n";
  out += "  \"responses\": " + std::to_string(s.responses) + ",\n";
  out += "  \"throughput_rps\": " + number(throughput(r), 1) + ",\n";
  out += "  \"latency_us\": {\"count\": " + std::to_string(s.latency.count());
  out += ", \"min\": " + micros(s.latency.min());
  out += ", \"mean\": " + number(s.latency.mean() / 1000.0, 1);
  for (const auto& p : kPercentiles) {
    out += ", \"" + std::string(p.name) + "\": " + micros(s.latency.value_at(p.q));
  }
  out += ", \"max\": " + micros(s.latency.max()) + "},\n";
  out += "  \"status\": {";
  bool first = true;
  for (std::size_t code = 0; code < s.status.size(); ++code) {
    if (s.status[code] == 0) continue;
    out += first ? "" : ", ";
    out += "\"" + std::to_string(code) + "\": " + std::to_string(s.status[code]);
    first = false;
  }
  out += "},\n  \"unexpected_status\": " + std::to_string(s.unexpected_status) + ",\n";
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
  out += "  \"open_loop\": {\"late_sends\": " + std::to_string(s.late_sends) +
         ", \"max_lateness_us\": " + micros(s.max_lateness_ns) + "}\n}\n";
  return out;
}

std::string tsv_header() {
  return "label\tresponses\trps\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\terrors\tunexpected\t"
         "all_responses\tbytes_received\n";
}

std::string to_tsv_line(const ReportContext& c, const LoadResult& r) {
  const auto& s = r.stats;
  std::string out = c.label;
  out += "\t" + std::to_string(s.responses) + "\t" + number(throughput(r), 1);
  for (const auto& p : kPercentiles) out += "\t" + micros(s.latency.value_at(p.q));
  out += "\t" + micros(s.latency.max());
  out += "\t" + std::to_string(s.error_total()) + "\t" + std::to_string(s.unexpected_status);
  out += "\t" + std::to_string(s.all_responses) + "\t" + std::to_string(s.bytes_received) + "\n";
  return out;
}

std::string human_summary(const ReportContext& c, const LoadResult& r) {
  const auto& s = r.stats;
  std::string out = "wg-bench " + c.label + " (" + c.scenario + ", " +
                    std::string(to_string(c.load.mode)) + " loop, " +
                    std::to_string(c.load.connections) + " connections): ";
  out += std::to_string(s.responses) + " answers in " + number(r.measured_seconds, 2) +
         " s = " + number(throughput(r), 0) + " req/s; latency us";
  for (const auto& p : kPercentiles)
    out += " " + std::string(p.name) + "=" + micros(s.latency.value_at(p.q));
  out += " max=" + micros(s.latency.max());
  out += "; errors " + std::to_string(s.error_total()) + ", unexpected status " +
         std::to_string(s.unexpected_status) + "\n";
  return out;
}

}  // namespace wg::bench
