#include "replay.hpp"

#include <algorithm>
#include <functional>

#include "serving/serve_policy.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/page_window.hpp"

namespace wg::whatif {

namespace {

// The jitter's draw for a copy, as the server's random source would give one: spread evenly
// over (0, 1], and the same for the same key stored at the same moment, so a replay gives the
// same figures every time.
double draw_for(const std::string& key, WallTime now) {
  const std::size_t h = std::hash<std::string>{}(key) ^
                        (static_cast<std::size_t>(unix_millis(now)) * 0x9E3779B97F4A7C15ull);
  return static_cast<double>((h >> 11) % 1'000'000 + 1) / 1'000'000.0;
}

}  // namespace

Replay::Replay(const config::Config& config)
    : ttl_(config.cache),
      while_revalidate_(std::chrono::duration_cast<std::chrono::milliseconds>(
          config.cache.stale_while_revalidate)),
      if_error_(std::chrono::duration_cast<std::chrono::milliseconds>(config.cache.stale_if_error)),
      derive_pages_(config.cache.derive_pages),
      widget_slack_(config.quota.widget_slack),
      prefetch_min_requests_(config.cache.prefetch_min_requests),
      refresh_(config.cache) {}

namespace {

std::uint64_t asked_enough(const std::unordered_map<std::string, std::uint64_t>& asked,
                           std::uint64_t min_requests) {
  return static_cast<std::uint64_t>(std::count_if(
      asked.begin(), asked.end(), [&](const auto& key) { return key.second >= min_requests; }));
}

}  // namespace

Figures Replay::figures() const {
  Figures figures = figures_;
  figures.prefetch_keys =
      prefetch_keys_before_ + asked_enough(asked_today_, prefetch_min_requests_);
  return figures;
}

bool Replay::usable(const std::string& key, WallTime now) const {
  const auto it = copies_.find(key);
  return it != copies_.end() && now < it->second.stale_until;
}

void Replay::store(const std::string& key, WallTime now, bool negative) {
  const cache::Freshness freshness =
      negative ? ttl_.for_negative(now) : ttl_.for_success(now, draw_for(key, now));
  copies_[key] = {now, freshness.fresh_until, freshness.stale_until, negative};
}

// The guard: fetches of one widget in one freshness period, past its bound plus the slack, are
// paced (the server then lets one call through per quota.widget_pace; a replay counts none).
bool Replay::fetch_allowed(const std::string& widget, WallTime now) {
  Spent& spent = spent_[widget];
  const cache::TtlPolicy::Period period = ttl_.period_of(now);
  if (spent.period_end != period.end) spent = {period.end, 0};
  const auto counts = counts_.find(widget);
  const std::uint64_t bound = counts == counts_.end() ? cache::kBoundWithoutWidgetData
                                                      : cache::upstream_bound(counts->second);
  if (serving::widget_paced(spent.fetches, bound, widget_slack_)) return false;
  ++spent.fetches;
  return true;
}

Replay::Answer Replay::serve_key(const std::string& key, const std::string& widget, WallTime now,
                                 bool negative) {
  // The demand a prefetch would count, by freshness day (from refresh_at + refresh_lag).
  const WallTime day = cache::next_refresh_boundary(now, refresh_.refresh_at, refresh_.utc_offset,
                                                    refresh_.refresh_lag) -
                       std::chrono::hours(24);
  if (day > day_) {
    prefetch_keys_before_ += asked_enough(asked_today_, prefetch_min_requests_);
    asked_today_.clear();
    day_ = day;
  }
  if (!negative) ++asked_today_[key];
  cache::Entry entry;
  const auto it = copies_.find(key);
  if (it != copies_.end()) {
    entry.status = it->second.negative ? 404 : 200;
    entry.stored_at = it->second.stored_at;
    entry.fresh_until = it->second.fresh_until;
    entry.stale_until = it->second.stale_until;
  }
  const serving::ServeDecision decision =
      serving::decide(it == copies_.end() ? nullptr : &entry, now, quota::Mode::normal,
                      {while_revalidate_, if_error_}, false);
  auto served_from = [&](WallTime stored_at) {
    figures_.oldest_served_s =
        std::max(figures_.oldest_served_s, std::chrono::duration<double>(now - stored_at).count());
  };
  switch (decision.action) {
    case serving::ServeDecision::Action::serve:
      served_from(entry.stored_at);
      return now < entry.fresh_until ? Answer::fresh : Answer::stale;
    case serving::ServeDecision::Action::serve_and_refresh:
      served_from(entry.stored_at);
      // One background refresh, which every later request finds stored.
      if (fetch_allowed(widget, now)) {
        ++figures_.upstream_requests;
        store(key, now, entry.status != 200);
      }
      return Answer::stale;
    case serving::ServeDecision::Action::fetch:
      break;
  }
  if (!fetch_allowed(widget, now)) {
    if (decision.fallback) served_from(entry.stored_at);
    return Answer::paced;
  }
  ++figures_.upstream_requests;
  store(key, now, negative);
  return Answer::miss;
}

void Replay::replay(const LoggedRequest& logged) {
  const WallTime now = logged.time;
  if (figures_.requests == 0) figures_.first = now;
  figures_.last = std::max(figures_.last, now);
  ++figures_.requests;
  const api::ApiRequest& request = logged.request;
  if (logged.counts) counts_[request.widget_id] = *logged.counts;

  const api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
  const std::string widget_key = api::cache_key(widget_request);
  Answer worst = Answer::fresh;
  auto take = [&](Answer answer) { worst = std::max(worst, answer); };

  if (logged.unknown_widget || request.endpoint == api::Endpoint::widget) {
    take(serve_key(widget_key, request.widget_id, now, logged.unknown_widget));
  } else {
    const auto counts = counts_.find(request.widget_id);
    const api::WidgetSummary* widget = counts == counts_.end() ? nullptr : &counts->second;
    // A page past the first window or of one platform waits for the widget data first.
    const bool needs_proof = request.query.skip >= cache::kWindowSize || request.query.type;
    if (needs_proof && !usable(widget_key, now)) {
      take(serve_key(widget_key, request.widget_id, now, false));
    }
    if (widget && usable(widget_key, now) && cache::provably_empty(request.query, widget)) {
      // Answered locally from the widget data's copy: as fresh or stale as that copy.
      take(serve_key(widget_key, request.widget_id, now, false));
    } else if (derive_pages_ && !cache::is_window(request.query)) {
      for (std::uint64_t start : cache::windows_for(request.query.skip, request.query.limit)) {
        // A window past the list's end is not needed (the one before it is short).
        if (widget && start > 0 && start >= widget->total_review_amount) break;
        take(serve_key(api::cache_key(cache::window_request(request, start)), request.widget_id,
                       now, false));
      }
    } else {
      take(serve_key(api::cache_key(request), request.widget_id, now, false));
    }
  }
  switch (worst) {
    case Answer::fresh:
      ++figures_.fresh;
      break;
    case Answer::stale:
      ++figures_.stale;
      break;
    case Answer::miss:
      ++figures_.miss;
      break;
    case Answer::paced:
      ++figures_.paced;
      break;
  }
}

}  // namespace wg::whatif
