#include "upstream-stub/fault_plan.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <utility>

namespace wg::stub {
namespace {

constexpr std::array<std::pair<FaultMode, std::string_view>, 13> kModes = {{
    {FaultMode::none, "none"},
    {FaultMode::status500, "status500"},
    {FaultMode::status503, "status503"},
    {FaultMode::status429, "status429"},
    {FaultMode::hang, "hang"},
    {FaultMode::truncate, "truncate"},
    {FaultMode::invalid_json, "invalid_json"},
    {FaultMode::close, "close"},
    {FaultMode::widget_no_total, "widget_no_total"},
    {FaultMode::widget_bad_total, "widget_bad_total"},
    {FaultMode::empty_data, "empty_data"},
    {FaultMode::widget_contradict, "widget_contradict"},
    {FaultMode::uncounted_source, "uncounted_source"},
}};

constexpr std::array<std::pair<FaultEndpoint, std::string_view>, 3> kEndpoints = {{
    {FaultEndpoint::any, "any"},
    {FaultEndpoint::widget, "widget"},
    {FaultEndpoint::reviews, "reviews"},
}};

constexpr std::string_view kDatePrefix = "date:";

}  // namespace

std::optional<RetryAfter> parse_retry_after(std::string_view text) {
  if (text.starts_with(kDatePrefix)) {
    text.remove_prefix(kDatePrefix.size());
    std::int64_t offset = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), offset);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    if (offset > kMaxRetryAfterDateOffset.count() || offset < -kMaxRetryAfterDateOffset.count()) {
      return std::nullopt;
    }
    return RetryAfter{{}, std::chrono::seconds(offset)};
  }
  // Control characters would break the response head (CR LF) or make an invalid field value.
  const bool printable = std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
  if (text.empty() || !printable) return std::nullopt;
  return RetryAfter{std::string(text), std::nullopt};
}

std::string to_string(const RetryAfter& retry_after) {
  if (retry_after.date) return std::string(kDatePrefix) + std::to_string(retry_after.date->count());
  return retry_after.verbatim;
}

bool takes_retry_after(FaultMode mode) {
  return mode == FaultMode::status500 || mode == FaultMode::status503 ||
         mode == FaultMode::status429;
}

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

void FaultPlan::set(FaultMode mode, std::optional<std::uint64_t> count, FaultEndpoint endpoint,
                    std::optional<RetryAfter> retry_after, std::optional<std::string> widget) {
  std::lock_guard lock(mutex_);
  if (mode == FaultMode::none || (count && *count == 0)) {
    plan_ = Snapshot{};
  } else {
    plan_ = Snapshot{mode, count, endpoint, std::move(retry_after), std::move(widget)};
  }
}

void FaultPlan::reset() {
  {
    std::lock_guard lock(mutex_);
    plan_ = Snapshot{};
  }
  latency_ms_.store(0);
}

FaultPlan::Fault FaultPlan::take(FaultEndpoint endpoint, std::string_view id) {
  std::lock_guard lock(mutex_);
  if (plan_.mode == FaultMode::none) return {};
  if (plan_.endpoint != FaultEndpoint::any && plan_.endpoint != endpoint) return {};
  if (plan_.widget && *plan_.widget != id) return {};
  Fault fault{plan_.mode, plan_.retry_after};
  if (plan_.remaining && --*plan_.remaining == 0) plan_ = Snapshot{};
  return fault;
}

FaultPlan::Snapshot FaultPlan::snapshot() const {
  std::lock_guard lock(mutex_);
  return plan_;
}

}  // namespace wg::stub
