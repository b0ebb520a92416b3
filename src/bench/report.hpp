#pragma once
// The results of a run as JSON (the file bench/run.sh and people read), as one tab-separated
// line (what the runner script aggregates without a JSON parser), and as a short human summary.

#include <string>

#include "bench/load_runner.hpp"
#include "bench/scenario.hpp"

namespace wg::bench {

struct ReportContext {
  std::string label;     // which system was measured, e.g. "gateway"
  std::string scenario;  // scenario name
  std::string target;    // host:port
  LoadSpec load;
  std::uint64_t seed = 0;
  std::size_t pool = 0;
};

std::string to_json(const ReportContext& context, const LoadResult& result);

// label, measured answers, req/s, p50, p90, p99, p99.9, max (microseconds), errors,
// unexpected statuses, all answers (warm-up included), bytes received, tab-separated.
std::string to_tsv_line(const ReportContext& context, const LoadResult& result);
std::string tsv_header();

std::string human_summary(const ReportContext& context, const LoadResult& result);

}  // namespace wg::bench
