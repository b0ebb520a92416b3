#pragma once
// --fail-if: conditions under which a run fails, for gating a CI job on a load test (k6's
// thresholds, stated as the failure instead of the pass). "p99>5ms,errors>0,rate<0.95": the
// run fails when its p99 is above 5 ms, or any request failed, or it achieved less than 95 %
// of the offered rate.
//
//   latency   p50 p90 p99 p99.9 max mean   value with a unit: us, ms (the default), s
//   counts    errors (no answer, or a status the request did not expect), unexpected,
//             late (open loop: sent > 1 ms after intended), unsent
//             a plain number is a count; "N%" is a share of the measured requests
//             (late: of the requests sent)
//   rates     rps (achieved answers per second), rate (achieved ÷ offered; open loop only)
//   operators >  >=  <  <=

#include <string>
#include <string_view>
#include <vector>

#include "wg-bench/run_figures.hpp"

namespace wg::bench {

struct Condition {
  enum class Metric { p50, p90, p99, p999, max, mean, errors, unexpected, late, unsent, rps, rate };
  enum class Op { greater, greater_equal, less, less_equal };
  Metric metric = Metric::p99;
  Op op = Op::greater;
  double value = 0;  // latency: nanoseconds; share: a fraction in [0, 1]
  bool share = false;
  std::string text;  // as written, for messages

  bool needs_open_loop() const { return metric == Metric::rate || metric == Metric::late; }
};

// Throws ScenarioError naming the bad condition.
std::vector<Condition> parse_fail_if(std::string_view text);

// The value a condition compares (nanoseconds for latencies, a fraction for shares).
double condition_value(const Condition& condition, const RunFigures& figures);
bool holds(const Condition& condition, const RunFigures& figures);

// The conditions that hold, each described with the measured value ("p99>5ms (p99 = 7.31 ms)").
std::vector<std::string> crossed(const std::vector<Condition>& conditions,
                                 const RunFigures& figures);

}  // namespace wg::bench
