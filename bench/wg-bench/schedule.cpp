#include "wg-bench/schedule.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace wg::bench {

OpenLoopSchedule::OpenLoopSchedule(SteadyTime start, double rate, std::size_t connections,
                                   std::size_t connection_index)
    : OpenLoopSchedule(start, LoadProfile::constant(rate), connections, connection_index) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw std::invalid_argument("schedule: rate must be > 0");
}

OpenLoopSchedule::OpenLoopSchedule(SteadyTime start, LoadProfile profile, std::size_t connections,
                                   std::size_t connection_index)
    : start_(start),
      profile_(std::move(profile)),
      connections_(connections),
      index_(connection_index) {
  if (connections == 0 || connection_index >= connections) {
    throw std::invalid_argument("schedule: connection index out of range");
  }
}

SteadyTime OpenLoopSchedule::intended(std::uint64_t j) const {
  const double seconds = profile_.time_of_integral(static_cast<double>(global_index(j)));
  if (seconds == LoadProfile::kNever) return SteadyTime::max();
  const auto ns = static_cast<std::int64_t>(std::llround(static_cast<long double>(seconds) * 1e9L));
  return start_ + std::chrono::duration_cast<SteadyTime::duration>(std::chrono::nanoseconds(ns));
}

std::uint64_t OpenLoopSchedule::first_at_or_after(SteadyTime t) const {
  if (t <= start_) return 0;
  // Estimate from the profile, then correct for rounding by stepping.
  const double seconds = std::chrono::duration<double>(t - start_).count();
  const double global = profile_.integral_to(seconds);
  const double jf = (global - static_cast<double>(index_)) / static_cast<double>(connections_);
  std::uint64_t j = jf <= 0 ? 0 : static_cast<std::uint64_t>(std::floor(jf));
  while (j > 0 && intended(j - 1) >= t) --j;
  while (intended(j) < t) ++j;
  return j;
}

std::uint64_t OpenLoopSchedule::count_in(SteadyTime from, SteadyTime to) const {
  if (to <= from) return 0;
  return first_at_or_after(to) - first_at_or_after(from);
}

}  // namespace wg::bench
