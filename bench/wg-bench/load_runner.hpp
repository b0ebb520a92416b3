#pragma once
// The I/O shell of the load generator. One io_context per thread, connections spread over them
// round-robin (load_context.hpp: the pacing and recording they share; http1_connection.hpp).
//
// Timeline: [start, start + warmup) is warm-up (sent, not measured); [warmup end, end) is
// measured; after `end` connections finish what they are doing and leave. A hard stop at
// end + timeout + 500 ms closes whatever is still open, so a run never outlasts its budget by
// more than that; requests cut off there count as timeouts (and, in open loop, requests that
// were never sent count as `unsent`). With a ramp there is no warm-up and the stages make the
// measured period.

#include <vector>

#include "wg-bench/request_mix.hpp"
#include "wg-bench/run_stats.hpp"
#include "wg-bench/scenario.hpp"
#include "wg-bench/target.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::bench {

enum class Protocol { http1, h2 };

struct LoadOptions {
  Target target;  // target.tls: connections speak TLS
  Protocol protocol = Protocol::http1;
  unsigned streams = 1;  // HTTP/2: concurrent streams per connection
  // TLS: with a CA file the server's certificate is verified against it and server_name (or the
  // target's address); without one it is not verified (loopback only, self-signed test certs).
  std::string tls_ca_file;
  std::string tls_server_name;
  LoadSpec load;                              // requests > 0 switches to count mode
  const std::vector<BenchRequest>* requests;  // not empty; cycled through
  bool progress = false;                      // a live line on stderr, once a second
};

struct LoadResult {
  RunStats stats;
  // The measured period as planned (count mode: until the last answer).
  double measured_seconds = 0;
  // From the start of the measured period to its end or to the last measured answer, whichever
  // is later: an open loop that fell behind keeps sending after the planned end.
  double elapsed_seconds = 0;
  // Open loop: requests the schedule intended in the measured period (0 in closed loop).
  double intended_requests = 0;
  double warmup_seconds = 0;  // where the measured period starts in the time series
};

// Runs the load to completion on the calling thread plus load.threads - 1 more.
LoadResult run_load(const LoadOptions& options, const Clock& clock = SystemClock::instance());

// The profile a load spec describes: rate (open loop) or connections (closed loop) over time.
LoadProfile load_profile(const LoadSpec& load);

// What a ramp does to a load spec: its stages are the measured period (duration), with no
// warm-up and no request count, and in closed loop its peak is the connection count. A spec
// without a ramp comes back unchanged.
LoadSpec resolve_ramp(LoadSpec load);

}  // namespace wg::bench
