#include "prefetch_plan.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/page_window.hpp"

namespace wg::prefetch {

std::optional<std::uint64_t> prefetch_budget(const BudgetFacts& facts) {
  if (facts.monthly_limit == 0) return std::nullopt;
  if (facts.used >= facts.monthly_limit) return 0;
  const double left = static_cast<double>(facts.monthly_limit - facts.used);
  const double days = std::max(1u, facts.days_left);
  const double share = std::clamp(facts.share, 0.0, 1.0);
  auto budget = static_cast<std::uint64_t>(std::floor(share * left / days));
  // Economy begins at used / limit >= economy_at: the last request that stays below it is the
  // one that leaves used < economy_at × limit.
  const double economy = facts.economy_at * static_cast<double>(facts.monthly_limit);
  const double below = std::ceil(economy) - 1.0 - static_cast<double>(facts.used);
  if (below <= 0) return 0;
  budget = std::min(budget, static_cast<std::uint64_t>(below));
  if (facts.paced_up_to) {
    budget =
        std::min(budget, *facts.paced_up_to > facts.used ? *facts.paced_up_to - facts.used : 0);
  }
  return budget;
}

unsigned days_left(WallTime now, WallTime resets_at) {
  if (resets_at <= now) return 1;
  const auto left = resets_at - now;
  const auto days =
      (left + std::chrono::hours(24) - std::chrono::milliseconds(1)) / std::chrono::hours(24);
  return static_cast<unsigned>(std::max<std::int64_t>(1, days));
}

Plan plan_prefetch(const std::vector<DemandedKey>& demand, std::uint64_t min_requests,
                   bool derive_pages) {
  Plan plan;
  // Widgets in the order their first key comes; each widget's fetches in demand order.
  std::vector<std::string> widgets;
  std::unordered_map<std::string, std::vector<PlannedFetch>> reviews_of;
  std::unordered_set<std::string> planned;
  auto add_review_fetch = [&](std::vector<PlannedFetch>& into, api::ApiRequest request) {
    std::string key = api::cache_key(request);
    if (planned.insert(key).second) into.push_back({std::move(request), std::move(key)});
  };
  for (const DemandedKey& demanded : demand) {
    if (demanded.requests < min_requests) continue;
    std::optional<api::ApiRequest> request = api::request_of_key(demanded.key);
    if (!request) {
      ++plan.invalid;
      continue;
    }
    auto [slot, first] = reviews_of.try_emplace(request->widget_id);
    if (first) widgets.push_back(request->widget_id);
    if (request->endpoint == api::Endpoint::widget) continue;  // always first, below
    if (derive_pages && !cache::is_window(request->query)) {
      for (std::uint64_t start : cache::windows_for(request->query.skip, request->query.limit)) {
        add_review_fetch(slot->second, cache::window_request(*request, start));
      }
    } else {
      add_review_fetch(slot->second, std::move(*request));
    }
  }
  for (const std::string& widget : widgets) {
    api::ApiRequest widget_data{api::Endpoint::widget, widget, {}};
    std::string key = api::cache_key(widget_data);
    plan.fetches.push_back({std::move(widget_data), std::move(key)});
    auto& reviews = reviews_of[widget];
    std::move(reviews.begin(), reviews.end(), std::back_inserter(plan.fetches));
  }
  return plan;
}

bool looks_unrefreshed(std::uint64_t fetched, std::uint64_t unchanged,
                       std::optional<double> baseline) {
  if (!baseline || unchanged == 0) return false;
  const std::uint64_t n = fetched + unchanged;
  const double p = std::clamp(*baseline, 0.01, 0.99);
  // P(X >= unchanged) for X ~ Binomial(n, p).
  double tail = 0;
  for (std::uint64_t k = unchanged; k <= n; ++k) {
    double choose = 1;
    for (std::uint64_t i = 0; i < k; ++i) {
      choose = choose * static_cast<double>(n - i) / static_cast<double>(i + 1);
    }
    tail +=
        choose * std::pow(p, static_cast<double>(k)) * std::pow(1 - p, static_cast<double>(n - k));
  }
  return tail < 0.01;
}

WallTime fetch_due(WallTime start, std::chrono::milliseconds window, std::size_t index,
                   std::size_t expected) {
  if (expected <= 1 || index == 0) return start;
  const std::size_t at = std::min(index, expected - 1);
  return start + window * static_cast<std::int64_t>(at) / static_cast<std::int64_t>(expected);
}

}  // namespace wg::prefetch
