#include "stub/fault_plan.hpp"

#include <array>
#include <utility>

namespace wg::stub {
namespace {

constexpr std::array<std::pair<FaultMode, std::string_view>, 8> kModes = {{
    {FaultMode::none, "none"},
    {FaultMode::status500, "status500"},
    {FaultMode::status503, "status503"},
    {FaultMode::status429, "status429"},
    {FaultMode::hang, "hang"},
    {FaultMode::truncate, "truncate"},
    {FaultMode::invalid_json, "invalid_json"},
    {FaultMode::close, "close"},
}};

constexpr std::array<std::pair<FaultEndpoint, std::string_view>, 3> kEndpoints = {{
    {FaultEndpoint::any, "any"},
    {FaultEndpoint::widget, "widget"},
    {FaultEndpoint::reviews, "reviews"},
}};

}  // namespace

std::optional<FaultMode> parse_fault_mode(std::string_view text) {
  for (const auto& [mode, name] : kModes) {
    if (name == text) return mode;
  }
  return std::nullopt;
}

std::string_view to_string(FaultMode mode) {
  for (const auto& [m, name] : kModes) {
    if (m == mode) return name;
  }
  return "none";
}

std::optional<FaultEndpoint> parse_fault_endpoint(std::string_view text) {
  for (const auto& [endpoint, name] : kEndpoints) {
    if (name == text) return endpoint;
  }
  return std::nullopt;
}

std::string_view to_string(FaultEndpoint endpoint) {
  for (const auto& [e, name] : kEndpoints) {
    if (e == endpoint) return name;
  }
  return "any";
}

void FaultPlan::set(FaultMode mode, std::optional<std::uint64_t> count, FaultEndpoint endpoint) {
  std::lock_guard lock(mutex_);
  if (mode == FaultMode::none || (count && *count == 0)) {
    plan_ = Snapshot{};
  } else {
    plan_ = Snapshot{mode, count, endpoint};
  }
}

void FaultPlan::reset() {
  {
    std::lock_guard lock(mutex_);
    plan_ = Snapshot{};
  }
  latency_ms_.store(0);
}

FaultMode FaultPlan::take(FaultEndpoint endpoint) {
  std::lock_guard lock(mutex_);
  if (plan_.mode == FaultMode::none) return FaultMode::none;
  if (plan_.endpoint != FaultEndpoint::any && plan_.endpoint != endpoint) return FaultMode::none;
  const FaultMode mode = plan_.mode;
  if (plan_.remaining && --*plan_.remaining == 0) plan_ = Snapshot{};
  return mode;
}

FaultPlan::Snapshot FaultPlan::snapshot() const {
  std::lock_guard lock(mutex_);
  return plan_;
}

}  // namespace wg::stub
