#pragma once
// The figures a run is judged by, computed in one place from what it measured: achieved and
// offered rates, the share of late and unsent requests, answers that were what the request
// expected. The report prints them, --fail-if conditions test them (thresholds.hpp), and
// assess() turns them into warnings and wg-bench's exit status.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "wg-bench/load_runner.hpp"

namespace wg::bench {

// wg-bench's exit statuses (bench/README.md). A run that ended in 3, 4 or 5 still writes its
// results; the lowest applicable non-zero status wins.
enum class ExitStatus : int {
  ok = 0,
  runtime_error = 1,      // a file could not be read or written, the run could not start
  usage = 2,              // bad or inapplicable flags; nothing was sent
  connection_failed = 3,  // the target could not be reached, or connections failed during the run
  no_valid_answer = 4,    // no measured request got an answer it expected
  threshold_crossed = 5,  // a --fail-if condition held
};

struct RunFigures {
  bool open_loop = false;
  double measured_seconds = 0;
  double elapsed_seconds = 0;
  double achieved_rps = 0;  // answers per second (open loop: over the elapsed time)
  double offered_rps = 0;   // open loop: what the schedule asked for; 0 in closed loop
  double rate_ratio = 0;    // achieved ÷ offered; 0 in closed loop
  std::uint64_t requests = 0;
  std::uint64_t responses = 0;
  std::uint64_t expected_answers = 0;  // responses whose status the request expected
  std::uint64_t transport_errors = 0;  // timeouts, closes, connect failures, unsent...
  std::uint64_t unexpected = 0;        // answers with a status the request did not expect
  std::uint64_t failed = 0;            // transport errors + unexpected
  std::uint64_t connect_errors = 0;
  std::uint64_t sends = 0;  // measured requests written
  std::uint64_t late_sends = 0;
  std::uint64_t unsent = 0;
  double max_lateness_ms = 0;
  const Histogram* latency = nullptr;  // nanoseconds
};

RunFigures figures_of(const LoadResult& result, LoadMode mode);

// "429 x 20, 503 x 3": the `most` most frequent status codes of a count by code, most frequent
// first ("..." when there are more).
std::string status_counts(const std::array<std::uint64_t, 600>& by_status, std::size_t most = 4);

struct Assessment {
  ExitStatus status = ExitStatus::ok;
  std::vector<std::string> warnings;  // one sentence each
};

// Warnings a reader must not miss (overload, late and unsent requests, failures) and the exit
// status they imply; --fail-if is applied on top by the caller.
Assessment assess(const RunFigures& figures, const RunStats& stats);

}  // namespace wg::bench
