#pragma once
// How much load a run offers over time: a level that is constant, or that ramps linearly
// through stages ("--ramp 2000:10s,20000:30s": from the start level to 2000 over 10 s, then to
// 20000 over 30 s; k6's stages). In open loop the level is the request rate and the schedule
// asks for the time of the n-th request; in closed loop it is the number of connections that
// may send, and a connection asks when it may start again. After the last stage the level
// holds. Times are seconds from the start of the run; pure arithmetic, no clock.

#include <chrono>
#include <limits>
#include <string_view>
#include <vector>

namespace wg::bench {

struct RampStage {
  double target = 0;  // the level reached at the end of the stage
  std::chrono::milliseconds duration{0};
};

// "TARGET:DURATION[,TARGET:DURATION...]", e.g. "1000:5s,8000:20s". Throws ScenarioError.
std::vector<RampStage> parse_ramp(std::string_view text);

class LoadProfile {
 public:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  static LoadProfile constant(double level);
  static LoadProfile ramp(double start_level, const std::vector<RampStage>& stages);

  double level_at(double t) const;
  // The load offered in [0, t]: the integral of the level (open loop: requests intended).
  double integral_to(double t) const;
  // The load offered in [from, to) (0 when to <= from).
  double offered_between(double from, double to) const {
    return to > from ? integral_to(to) - integral_to(from) : 0;
  }
  // The smallest t with integral_to(t) >= n; kNever when the level never gets there.
  double time_of_integral(double n) const;
  // The first time at or after `from` when the level is above `threshold` (a connection with
  // index `threshold` may send); kNever when it never is again.
  double first_time_above(double threshold, double from) const;
  // The stages' total length (0 for a constant level) and the highest level reached.
  double span() const { return segments_.empty() ? 0 : segments_.back().t1; }
  double peak() const;
  bool ramped() const { return !segments_.empty(); }

 private:
  struct Segment {
    double t0, t1;          // [t0, t1)
    double level0, level1;  // linear in between
    double integral0;       // integral_to(t0)
  };
  double tail_level() const { return segments_.empty() ? start_ : segments_.back().level1; }
  double tail_integral() const;

  double start_ = 0;
  std::vector<Segment> segments_;
};

}  // namespace wg::bench
