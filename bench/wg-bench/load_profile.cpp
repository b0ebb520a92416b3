#include "wg-bench/load_profile.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "wg-bench/scenario.hpp"

namespace wg::bench {

std::vector<RampStage> parse_ramp(std::string_view text) {
  std::vector<RampStage> stages;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view stage = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) {
      throw ScenarioError("--ramp ends with a comma");
    }
    const auto colon = stage.find(':');
    if (colon == std::string_view::npos) {
      throw ScenarioError("ramp stage \"" + std::string(stage) + "\" is not TARGET:DURATION");
    }
    RampStage parsed;
    const std::string_view target = stage.substr(0, colon);
    const auto [end, ec] =
        std::from_chars(target.data(), target.data() + target.size(), parsed.target);
    if (target.empty() || ec != std::errc{} || end != target.data() + target.size() ||
        !(parsed.target >= 0) || !std::isfinite(parsed.target)) {
      throw ScenarioError("ramp stage \"" + std::string(stage) + "\": bad target");
    }
    parsed.duration = parse_duration(stage.substr(colon + 1));
    if (parsed.duration.count() <= 0) {
      throw ScenarioError("ramp stage \"" + std::string(stage) + "\": duration must be > 0");
    }
    stages.push_back(parsed);
  }
  if (stages.empty()) throw ScenarioError("--ramp needs at least one TARGET:DURATION stage");
  return stages;
}

LoadProfile LoadProfile::constant(double level) {
  LoadProfile profile;
  profile.start_ = level;
  return profile;
}

LoadProfile LoadProfile::ramp(double start_level, const std::vector<RampStage>& stages) {
  LoadProfile profile;
  profile.start_ = start_level;
  double t = 0, level = start_level, integral = 0;
  for (const auto& stage : stages) {
    const double length = std::chrono::duration<double>(stage.duration).count();
    profile.segments_.push_back({t, t + length, level, stage.target, integral});
    integral += (level + stage.target) / 2 * length;
    t += length;
    level = stage.target;
  }
  return profile;
}

double LoadProfile::peak() const {
  double peak = start_;
  for (const auto& s : segments_) peak = std::max(peak, s.level1);
  return peak;
}

double LoadProfile::tail_integral() const {
  if (segments_.empty()) return 0;
  const auto& last = segments_.back();
  return last.integral0 + (last.level0 + last.level1) / 2 * (last.t1 - last.t0);
}

double LoadProfile::level_at(double t) const {
  for (const auto& s : segments_) {
    if (t < s.t1) {
      if (t <= s.t0) return s.level0;
      return s.level0 + (s.level1 - s.level0) * (t - s.t0) / (s.t1 - s.t0);
    }
  }
  return tail_level();
}

double LoadProfile::integral_to(double t) const {
  if (t <= 0) return 0;
  for (const auto& s : segments_) {
    if (t < s.t1) {
      const double tau = t - s.t0;
      return s.integral0 + (s.level0 + level_at(t)) / 2 * tau;
    }
  }
  return tail_integral() + tail_level() * (t - span());
}

double LoadProfile::time_of_integral(double n) const {
  if (n <= 0) return 0;
  for (const auto& s : segments_) {
    const double at_end = s.integral0 + (s.level0 + s.level1) / 2 * (s.t1 - s.t0);
    if (n > at_end) continue;
    // integral0 + a*tau + b*tau^2/2 = n, solved in the form that is stable for b near 0.
    const double a = s.level0;
    const double b = (s.level1 - s.level0) / (s.t1 - s.t0);
    const double delta = n - s.integral0;
    const double root = std::sqrt(std::max(0.0, a * a + 2 * b * delta));
    const double denominator = a + root;
    const double tau = denominator > 0 ? 2 * delta / denominator : 0;
    return std::min(s.t1, s.t0 + tau);
  }
  const double level = tail_level();
  if (!(level > 0)) return kNever;
  return span() + (n - tail_integral()) / level;
}

double LoadProfile::first_time_above(double threshold, double from) const {
  from = std::max(0.0, from);
  for (const auto& s : segments_) {
    if (s.t1 <= from) continue;
    const double begin = std::max(s.t0, from);
    if (level_at(begin) > threshold) return begin;
    if (s.level1 > threshold) {
      // Rising through the threshold inside this segment; a microsecond after the crossing the
      // level is safely above it whatever the rounding.
      const double crossing = s.t0 + (threshold - s.level0) * (s.t1 - s.t0) / (s.level1 - s.level0);
      return std::min(s.t1, std::max(begin, crossing) + 1e-6);
    }
  }
  if (tail_level() > threshold) return std::max(from, span());
  return kNever;
}

}  // namespace wg::bench
