#pragma once
// The results of a run as JSON (the file bench/run.sh and people read: totals, the judged
// figures, the per-second series and the full latency histogram), as tab-separated lines (a
// header and the run, what the runner script aggregates without a JSON parser), as a short
// human summary with its warnings, and the latency histogram in HdrHistogram's .hgrm
// percentile-distribution text (plottable with HdrHistogram's tools).

#include <string>

#include "wg-bench/load_runner.hpp"
#include "wg-bench/run_figures.hpp"
#include "wg-bench/scenario.hpp"

namespace wg::bench {

struct ReportContext {
  std::string label;     // which system was measured, e.g. "gateway"
  std::string scenario;  // scenario name
  std::string target;    // host:port
  LoadSpec load;
  std::uint64_t seed = 0;
  std::size_t pool = 0;
  std::string protocol = "http/1.1";  // what the connections spoke, e.g. "h2 over TLS"
};

// What the run is judged to be: its exit status, its warnings, the --fail-if conditions that
// held.
struct Verdict {
  ExitStatus status = ExitStatus::ok;
  std::vector<std::string> warnings;
  std::vector<std::string> crossed;
};

std::string to_json(const ReportContext& context, const LoadResult& result,
                    const RunFigures& figures, const Verdict& verdict);

std::string tsv_header();
// label, measured answers, req/s achieved, p50, p90, p99, p99.9, max (microseconds), errors,
// unexpected statuses, all answers (warm-up included), bytes received, then mode, offered
// req/s, late sends, unsent, exit status, then the visitors' p99, the walker's answers and its
// p99 ("-" for a role without answers); tab-separated, newline-terminated.
std::string to_tsv_line(const ReportContext& context, const LoadResult& result,
                        const RunFigures& figures, const Verdict& verdict);

std::string human_summary(const ReportContext& context, const LoadResult& result,
                          const RunFigures& figures, const Verdict& verdict);

// Values in milliseconds, percentiles iterated as HdrHistogram does with 5 ticks per half
// distance; the footer's Buckets/SubBuckets describe this histogram's geometry.
std::string to_hgrm(const Histogram& latency_ns);

}  // namespace wg::bench
