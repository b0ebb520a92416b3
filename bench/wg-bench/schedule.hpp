#pragma once
// Open-loop pacing. The run's n-th request is intended when the load profile has offered n
// requests since `start` (a constant rate: n/rate); connection c of C takes the requests c,
// c + C, c + 2C, ... Intended times are fixed up front and never depend
// on when earlier answers arrived, and latency is measured from them: a stalled server makes
// every request queued behind the stall late, and that lateness shows in the percentiles
// instead of being hidden by a client that waited politely (no coordinated omission).

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "wg-bench/load_profile.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::bench {

class OpenLoopSchedule {
 public:
  // rate: requests per second over all connections (> 0); connection_index < connections.
  OpenLoopSchedule(SteadyTime start, double rate, std::size_t connections,
                   std::size_t connection_index);
  // profile: requests per second over time (a ramp); its level may start at 0.
  OpenLoopSchedule(SteadyTime start, LoadProfile profile, std::size_t connections,
                   std::size_t connection_index);

  // Intended send time of this connection's j-th request (j from 0); SteadyTime::max() when
  // the profile never gets there. Computed from j directly, so no rounding error accumulates
  // over a long run.
  SteadyTime intended(std::uint64_t j) const;
  // Position of this connection's j-th request in the run-wide sequence.
  std::uint64_t global_index(std::uint64_t j) const { return index_ + j * connections_; }
  // How many of this connection's requests are intended in [from, to).
  std::uint64_t count_in(SteadyTime from, SteadyTime to) const;
  // The first j whose intended time is at or after t.
  std::uint64_t first_at_or_after(SteadyTime t) const;

 private:
  SteadyTime start_;
  LoadProfile profile_;
  std::uint64_t connections_;
  std::uint64_t index_;
};

}  // namespace wg::bench
