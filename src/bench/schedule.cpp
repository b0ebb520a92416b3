#include "bench/schedule.hpp"

#include <cmath>
#include <stdexcept>

namespace wg::bench {

OpenLoopSchedule::OpenLoopSchedule(SteadyTime start, double rate, std::size_t connections,
                                   std::size_t connection_index)
    : start_(start), rate_(rate), connections_(connections), index_(connection_index) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw std::invalid_argument("schedule: rate must be > 0");
  if (connections == 0 || connection_index >= connections) {
    throw std::invalid_argument("schedule: connection index out of range");
  }
}

SteadyTime OpenLoopSchedule::intended(std::uint64_t j) const {
  const long double seconds =
      static_cast<long double>(global_index(j)) / static_cast<long double>(rate_);
  const auto ns = static_cast<std::int64_t>(std::llround(seconds * 1e9L));
  return start_ + std::chrono::duration_cast<SteadyTime::duration>(std::chrono::nanoseconds(ns));
}

std::uint64_t OpenLoopSchedule::first_at_or_after(SteadyTime t) const {
  if (t <= start_) return 0;
  // Estimate from the rate, then correct for rounding by stepping.
  const long double seconds = std::chrono::duration<long double>(t - start_).count();
  const long double global = seconds * static_cast<long double>(rate_);
  long double jf =
      (global - static_cast<long double>(index_)) / static_cast<long double>(connections_);
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
