#pragma once
// The I/O shell of the load generator. One io_context per thread, connections spread over them
// round-robin, each connection a handler-driven state machine that writes a pre-generated
// request, reads the answer with ResponseReader, records it, and goes again (closed loop) or
// waits for its next intended send time (open loop). Errors close the connection, are counted by
// kind, and the next request reconnects.
//
// Timeline: [start, start + warmup) is warm-up (sent, not measured); [warmup end, end) is
// measured; after `end` connections finish what they are doing and leave. A hard stop at
// end + timeout + 500 ms closes whatever is still open, so a run never outlasts its budget by
// more than that; requests cut off there count as timeouts (and, in open loop, requests that
// were never sent count as `unsent`).

#include <vector>

#include "bench/request_mix.hpp"
#include "bench/run_stats.hpp"
#include "bench/scenario.hpp"
#include "bench/target.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::bench {

struct LoadOptions {
  Target target;
  LoadSpec load;                              // requests > 0 switches to count mode
  const std::vector<BenchRequest>* requests;  // not empty; cycled through
  bool progress = false;                      // a live line on stderr, once a second
};

struct LoadResult {
  RunStats stats;
  double measured_seconds = 0;  // the measured period (count mode: until the last answer)
};

// Runs the load to completion on the calling thread plus load.threads - 1 more.
LoadResult run_load(const LoadOptions& options, const Clock& clock = SystemClock::instance());

}  // namespace wg::bench
