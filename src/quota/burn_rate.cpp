#include "widget_gateway/quota/burn_rate.hpp"

#include <algorithm>
#include <limits>

namespace wg::quota {

namespace {

constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::size_t kMaxSamples = BurnRate::kWindow / BurnRate::kSpacing + 1;

}  // namespace

void BurnRate::observe(std::string_view month, std::uint64_t used, SteadyTime now) {
  if (!started_) {
    started_ = true;
    latest_ = {now, 0};
  } else {
    std::uint64_t burnt = 0;
    if (month != month_) {
      burnt = used;
    } else if (used > used_) {
      burnt = used - used_;
    }
    latest_ = {now, latest_.burnt + burnt};
  }
  month_ = month;
  used_ = used;
  if (samples_.empty() || now - samples_.back().at >= kSpacing) samples_.push_back(latest_);
  trim(now);
}

void BurnRate::trim(SteadyTime now) {
  while (!samples_.empty() &&
         (now - samples_.front().at > kWindow || samples_.size() > kMaxSamples)) {
    samples_.pop_front();
  }
}

double BurnRate::per_second(SteadyTime now) const {
  // The oldest sample still inside the window is the base; the latest reading is the top.
  auto base = std::find_if(samples_.begin(), samples_.end(),
                           [&](const Sample& s) { return now - s.at <= kWindow; });
  if (base == samples_.end()) return 0.0;
  const auto span = std::max<SteadyTime::duration>(now - base->at, kMinSpan);
  const double seconds = std::chrono::duration<double>(span).count();
  return static_cast<double>(latest_.burnt - base->burnt) / seconds;
}

std::uint64_t projected_month_end(std::uint64_t used, double per_second, WallTime now,
                                  const QuotaPeriod& period) {
  if (!(per_second > 0.0) || now >= period.resets_at) return used;
  const auto left = period.resets_at - std::max(now, period.starts_at);
  const long double more = static_cast<long double>(per_second) *
                           static_cast<long double>(std::chrono::duration<double>(left).count());
  // long double holds every uint64 exactly (64-bit mantissa on x86-64); compared before
  // converting back, so nothing overflows.
  if (!(more < static_cast<long double>(kMax - used))) return kMax;
  return used + static_cast<std::uint64_t>(more + 0.5L);
}

}  // namespace wg::quota
