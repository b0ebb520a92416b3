#include "prefetch_leader.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/quota/pacing.hpp"
#include "widget_gateway/quota/quota_period.hpp"

namespace wg::prefetch {
namespace asio = boost::asio;
using metrics::PrefetchResult;

namespace {

constexpr std::chrono::milliseconds kLease{30'000};
constexpr std::chrono::seconds kRenewEvery{10};
// How often a wait for a fetch's moment looks at the clock again: the fleet clock is the judge,
// and a test steps it instead of waiting.
constexpr std::chrono::milliseconds kLookEvery{100};
constexpr std::chrono::hours kDay{24};
constexpr std::chrono::minutes kRetryAfterPause{1};
constexpr std::chrono::minutes kLateStart{10};
// The hottest keys fetched first, one at a time, to see whether the vendor's data is new; while
// it looks late, asked again after a sixth of the window, at most three times (half the window).
constexpr std::size_t kCanaryKeys = 3;
constexpr unsigned kCanaryTries = 3;
// A boundary's progress is kept past the baseline's days, which read it.
constexpr std::chrono::hours kProgressKept{24 * (kBaselineDays + 1)};

// Extends the lease only for its holder.
constexpr std::string_view kRenewScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua";

// Gives the lease back only for its holder.
constexpr std::string_view kReleaseScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
)lua";

std::uint64_t number_or_zero(std::string_view text) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// The demand as Redis keeps it: with derivation on, a page cut from windows counts for each
// window it is cut from (what a prefetch fetches, and what its waste is judged by).
serving::DemandCounts as_stored(serving::DemandCounts counts, bool derive_pages) {
  if (!derive_pages) return counts;
  serving::DemandCounts stored;
  stored.dropped = counts.dropped;
  std::vector<std::pair<std::string, std::uint64_t>> windows;
  for (auto& [key, requests] : counts.keys) {
    std::optional<api::ApiRequest> request = api::request_of_key(key);
    if (!request || request->endpoint == api::Endpoint::widget ||
        cache::is_window(request->query)) {
      stored.keys.emplace_back(std::move(key), requests);
      continue;
    }
    for (std::uint64_t start : cache::windows_for(request->query.skip, request->query.limit)) {
      windows.emplace_back(api::cache_key(cache::window_request(*request, start)), requests);
    }
  }
  serving::merge_into(stored, {std::move(windows), 0}, serving::kMaxKeysPerHandOver * 4);
  return stored;
}

}  // namespace

// One boundary's prefetch while it runs: the plan, the lanes' shared cursor, what was spent.
struct PrefetchLeader::Run {
  WallTime day;
  Plan plan;
  std::optional<std::uint64_t> budget;  // upstream requests this leader may still spend
  std::size_t expected = 0;             // fetches the window is spread over
  std::size_t next = 0;                 // the plan's next fetch
  std::uint64_t reserved = 0;           // upstream requests under way or made
  std::size_t in_flight = 0;            // fetches taken and not yet done
  std::size_t lanes_running = 0;
  bool stop = false;
  std::string paused;
  PrefetchReport report;
  std::vector<std::string> fetched_keys;  // not yet saved to <prefix>prefetched:<day>
  SteadyTime started{};
  std::unique_ptr<asio::steady_timer> lanes_done;  // cancelled as each lane ends
};

PrefetchLeader::PrefetchLeader(Parts parts, const config::Config& config)
    : parts_(std::move(parts)), store_(parts_.redis, parts_.keys) {
  apply(config);
}

PrefetchLeader::~PrefetchLeader() = default;

void PrefetchLeader::apply(const config::Config& config) {
  settings_.enabled = config.cache.prefetch;
  settings_.share = config.cache.prefetch_share;
  settings_.window =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.cache.prefetch_window);
  settings_.min_requests = config.cache.prefetch_min_requests;
  settings_.derive_pages = config.cache.derive_pages;
  settings_.cache = config.cache;
  settings_.economy_at = config.quota.economy_at;
  settings_.pacing = config.quota.pacing;
  settings_.quota_utc_offset = config.quota.utc_offset;
  // Visitors first: the prefetch keeps to a quarter of this instance's upstream slots.
  settings_.lanes = std::max<std::size_t>(1, config.upstream.max_in_flight / 4);
}

void PrefetchLeader::stop() {
  stopping_ = true;
}

WallTime PrefetchLeader::day_start(WallTime now) const {
  const config::CacheConfig& cache = settings_.cache;
  return cache::next_refresh_boundary(now, cache.refresh_at, cache.utc_offset, cache.refresh_lag) -
         kDay;
}

asio::awaitable<void> PrefetchLeader::tick() {
  const WallTime now = parts_.clock.wall_now();
  co_await hand_over_demand(now);
  if (!settings_.enabled || leading_ || stopping_) co_return;
  const WallTime day = day_start(now);
  // Up to a little after the window: a leader that comes late (a tick after a short window, an
  // instance started just after the boundary) still fetches at once what visitors have not
  // refreshed yet; later in the day, visitors have had their say.
  if (done_day_ == day || now >= day + settings_.window + kLateStart) co_return;
  if (retry_at_ && parts_.clock.steady_now() < *retry_at_) co_return;
  leading_ = true;
  asio::co_spawn(parts_.control, lead(day), [this](std::exception_ptr error) {
    leading_ = false;
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        log::error("prefetch_failed", {{"error", e.what()}});
      }
    }
  });
}

asio::awaitable<void> PrefetchLeader::hand_over_demand(WallTime now) {
  serving::DemandCounts taken = co_await parts_.target.take_demand();
  if (!settings_.enabled && pending_.keys.empty()) co_return;
  if (parts_.metrics && taken.dropped > 0) parts_.metrics->demand_dropped(taken.dropped);
  taken.dropped = 0;
  const std::int64_t day_ms = unix_millis(day_start(now));
  // Counts of a day that has ended go to that day before the new day's are added.
  if (!pending_.keys.empty() && pending_day_ms_ != day_ms) {
    if (co_await store_.add(pending_day_ms_, pending_)) pending_ = {};
    if (!pending_.keys.empty()) pending_ = {};  // its day is over: dropped, not carried on
  }
  pending_day_ms_ = day_ms;
  const std::size_t before = pending_.keys.size();
  serving::merge_into(pending_, as_stored(std::move(taken), settings_.derive_pages),
                      serving::kMaxKeysPerHandOver * 4);
  if (parts_.metrics && pending_.dropped > 0) parts_.metrics->demand_dropped(pending_.dropped);
  pending_.dropped = 0;
  if (pending_.keys.empty() && before == 0) co_return;
  if (co_await store_.add(day_ms, pending_)) pending_ = {};
}

asio::awaitable<bool> PrefetchLeader::take_lease() {
  std::vector<std::string> set{"SET", parts_.keys.prefetch_leader(), parts_.instance, "NX",
                               "PX",  std::to_string(kLease.count())};
  auto [ec, reply] = co_await parts_.redis.command(std::move(set));
  if (ec || reply.is_error()) co_return false;
  if (reply.type == redis::Reply::Type::status) co_return true;
  // Held: by this instance (a run that ended early), or by another.
  co_return co_await renew_lease();
}

asio::awaitable<bool> PrefetchLeader::renew_lease() {
  std::vector<std::string> args{
      "EVAL",          std::string(kRenewScript),     "1", parts_.keys.prefetch_leader(),
      parts_.instance, std::to_string(kLease.count())};
  auto [ec, reply] = co_await parts_.redis.command(std::move(args));
  co_return !ec && reply.type == redis::Reply::Type::integer && reply.integer == 1;
}

asio::awaitable<void> PrefetchLeader::give_lease_back() {
  std::vector<std::string> args{"EVAL", std::string(kReleaseScript), "1",
                                parts_.keys.prefetch_leader(), parts_.instance};
  co_await parts_.redis.command(std::move(args));
}

asio::awaitable<void> PrefetchLeader::lead(WallTime day) {
  if (!co_await take_lease()) co_return;  // another instance leads, or Redis is away
  const std::int64_t day_ms = unix_millis(day);
  const std::string progress_key = parts_.keys.prefetch_progress(day_ms);
  std::vector<std::string> read{"HGETALL", progress_key};
  auto [read_error, progress] = co_await parts_.redis.command(std::move(read));
  if (read_error || progress.type != redis::Reply::Type::array) {
    co_await give_lease_back();
    co_return;
  }
  auto run = std::make_shared<Run>();
  run->day = day;
  run->report.boundary = day;
  run->started = parts_.clock.steady_now();
  std::uint64_t spent_before = 0;
  bool done = false;
  for (std::size_t i = 0; i + 1 < progress.elements.size(); i += 2) {
    const std::string& field = progress.elements[i].str;
    const std::string& value = progress.elements[i + 1].str;
    if (field == "done") done = value == "1";
    if (field == "next") run->next = number_or_zero(value);
    if (field == "spent") spent_before = number_or_zero(value);
    for (std::size_t r = 0; r < metrics::kPrefetchResults; ++r) {
      if (field == metrics::to_string(static_cast<PrefetchResult>(r))) {
        run->report.results[r] = number_or_zero(value);
      }
    }
  }
  if (done) {
    done_day_ = day;
    co_await give_lease_back();
    co_return;
  }

  // The day that ended: its demand, and the waste of the prefetch that began it.
  const std::int64_t previous_ms = unix_millis(day - kDay);
  auto demand = co_await store_.most_asked(previous_ms, settings_.min_requests, kMaxPlannedKeys);
  if (!demand) {
    co_await give_lease_back();
    co_return;
  }
  std::vector<std::string> members{"SMEMBERS", parts_.keys.prefetched(previous_ms)};
  auto [members_error, prefetched] = co_await parts_.redis.command(std::move(members));
  if (!members_error && prefetched.type == redis::Reply::Type::array &&
      !prefetched.elements.empty()) {
    std::vector<std::string> keys;
    for (auto& element : prefetched.elements) keys.push_back(std::move(element.str));
    run->report.previous_fetched = keys.size();
    run->report.wasted = co_await store_.never_asked(previous_ms, keys);
  }
  run->plan = plan_prefetch(*demand, settings_.min_requests, settings_.derive_pages);
  run->report.planned = run->plan.fetches.size();

  const quota::Snapshot quota = parts_.quota.snapshot();
  BudgetFacts facts;
  facts.monthly_limit = quota.limit;
  facts.used = quota.used + quota.leased;
  facts.economy_at = settings_.economy_at;
  facts.share = settings_.share;
  facts.days_left = days_left(parts_.clock.wall_now(), quota.resets_at);
  if (settings_.pacing && quota.limit > 0) {
    const WallTime now = parts_.clock.wall_now();
    facts.paced_up_to = quota::pacing_budget(quota.limit, now,
                                             quota::quota_period(now, settings_.quota_utc_offset));
  }
  run->report.budget = prefetch_budget(facts);
  if (run->report.budget) {
    // What a leader before this one spent is spent: the budget was the day's.
    run->budget = *run->report.budget - std::min(*run->report.budget, spent_before);
  }
  run->report.upstream_requests = spent_before;
  run->expected = run->report.budget
                      ? std::min<std::size_t>(run->plan.fetches.size(), *run->report.budget)
                      : run->plan.fetches.size();

  co_await read_baseline(*run);
  co_await wait_for_new_data(run);

  run->lanes_done = std::make_unique<asio::steady_timer>(parts_.control);
  run->lanes_running = settings_.lanes;
  for (std::size_t i = 0; i < settings_.lanes; ++i) {
    asio::co_spawn(parts_.control, lane(run), [run](std::exception_ptr) {
      --run->lanes_running;
      run->lanes_done->cancel();
    });
  }
  // The lease is renewed while the lanes run; losing it (Redis away, or a clock so wrong that it
  // expired) stops them: another instance goes on from the saved cursor.
  SteadyTime renewed = timer_now();
  while (run->lanes_running > 0) {
    run->lanes_done->expires_after(std::chrono::seconds(1));
    co_await run->lanes_done->async_wait(asio::as_tuple(asio::use_awaitable));
    if (stopping_) {
      run->stop = true;
      run->paused = "stopped";
    }
    if (timer_now() - renewed >= kRenewEvery && run->lanes_running > 0) {
      renewed = timer_now();
      if (!co_await renew_lease()) {
        run->stop = true;
        run->paused = "lease_lost";
      }
      co_await save_progress(*run, false);
    }
  }
  const bool finished = run->next >= run->plan.fetches.size() && run->paused.empty();
  co_await save_progress(*run, finished);
  co_await give_lease_back();
  run->report.finished = finished;
  run->report.paused = run->paused;
  if (finished) done_day_ = day;
  const auto count = [&](PrefetchResult r) {
    return run->report.results[static_cast<std::size_t>(r)];
  };
  run->report.unchanged_share =
      unchanged_share_of(count(PrefetchResult::fetched), count(PrefetchResult::unchanged));
  // Stopped early: tried again a little later (the quota may come back, upstream's hold end).
  retry_at_.reset();
  if (!finished) retry_at_ = parts_.clock.steady_now() + kRetryAfterPause;
  finish(*run);
}

asio::awaitable<void> PrefetchLeader::lane(std::shared_ptr<Run> run) {
  const std::size_t planned = run->plan.fetches.size();
  while (!run->stop && !stopping_ && run->next < planned) {
    if (run->budget && run->reserved >= *run->budget) {
      // Fetches under way may give their reservation back (a copy stored meanwhile, a refusal):
      // the budget is spent only once none is left to.
      if (run->in_flight > 0) {
        asio::steady_timer wait(parts_.control, kLookEvery);
        co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
        continue;
      }
      // The rest is skipped for the budget (counted once, by the lane that sees it first).
      run->report.results[static_cast<std::size_t>(PrefetchResult::budget)] += planned - run->next;
      run->next = planned;
      break;
    }
    const std::size_t index = run->next++;
    ++run->reserved;
    ++run->in_flight;
    struct Landed {
      Run& run;
      ~Landed() { --run.in_flight; }
    } landed{*run};
    co_await sleep_until(fetch_due(run->day, settings_.window, index, run->expected), *run);
    if (stopping_) {  // the drain: the lease goes back with the cursor saved
      run->stop = true;
      run->paused = "stopped";
    }
    if (run->stop) {
      --run->reserved;
      run->next = std::min(run->next, index);  // not taken: the next leader starts here
      break;
    }
    // Economy or exhaustion pauses the prefetch: what the fleet has left is for visitors.
    if (parts_.quota.snapshot().mode != quota::Mode::normal) {
      --run->reserved;
      run->stop = true;
      run->paused = "quota";
      run->next = std::min(run->next, index);
      break;
    }
    const PlannedFetch& fetch = run->plan.fetches[index];
    serving::GatewayService::Prefetched done =
        co_await parts_.target.prefetch(fetch.request, run->day, false);
    if (done.everything_refused) {
      // Upstream's hold, an open circuit or the month spent: the key is taken up again later.
      --run->reserved;
      run->stop = true;
      run->paused = "upstream";
      run->next = std::min(run->next, index);
      break;
    }
    account(*run, fetch, done);
  }
}

void PrefetchLeader::account(Run& run, const PlannedFetch& fetch,
                             const serving::GatewayService::Prefetched& done) {
  if (!done.upstream_asked) --run.reserved;
  if (done.upstream_asked) ++run.report.upstream_requests;
  ++run.report.results[static_cast<std::size_t>(done.result)];
  if (parts_.metrics) parts_.metrics->prefetched(done.result);
  if (done.result == PrefetchResult::fetched || done.result == PrefetchResult::unchanged) {
    run.fetched_keys.push_back(fetch.key);
  }
}

asio::awaitable<void> PrefetchLeader::wait_for_new_data(std::shared_ptr<Run> run) {
  const std::size_t planned = run->plan.fetches.size();
  std::vector<std::size_t> canaries;
  std::uint64_t fetched = 0;
  std::uint64_t unchanged = 0;
  auto spent_out = [&] { return run->budget && run->reserved >= *run->budget; };
  // The hottest keys, in plan order, one at a time: a part of the plan like the rest.
  while (canaries.size() < kCanaryKeys && run->next < planned && !run->stop && !stopping_ &&
         !spent_out()) {
    const std::size_t index = run->next++;
    ++run->reserved;
    serving::GatewayService::Prefetched done =
        co_await parts_.target.prefetch(run->plan.fetches[index].request, run->day, false);
    if (done.everything_refused) {
      --run->reserved;
      run->next = index;
      co_return;  // the lanes stop on it as well
    }
    account(*run, run->plan.fetches[index], done);
    if (done.result == PrefetchResult::fetched) ++fetched;
    if (done.result == PrefetchResult::unchanged) ++unchanged;
    if (done.result == PrefetchResult::fetched || done.result == PrefetchResult::unchanged) {
      canaries.push_back(index);
    }
  }
  const auto wait =
      std::max<std::chrono::milliseconds>(std::chrono::seconds(1), settings_.window / 6);
  while (looks_unrefreshed(fetched, unchanged, run->report.baseline_share) &&
         run->report.late_waits < kCanaryTries) {
    ++run->report.late_waits;
    co_await wait_leading(parts_.clock.wall_now() + wait, *run);
    if (run->stop || stopping_) co_return;
    fetched = 0;
    unchanged = 0;
    for (std::size_t index : canaries) {
      if (spent_out()) break;
      ++run->reserved;
      serving::GatewayService::Prefetched done =
          co_await parts_.target.prefetch(run->plan.fetches[index].request, run->day, true);
      if (!done.upstream_asked) --run->reserved;
      if (done.upstream_asked) ++run->report.upstream_requests;
      if (parts_.metrics) parts_.metrics->prefetched(done.result);
      if (done.result == PrefetchResult::unchanged) ++unchanged;
      if (done.result == PrefetchResult::fetched) {
        ++fetched;
        // The key's outcome is the last one: new bytes after all.
        auto& results = run->report.results;
        auto& was = results[static_cast<std::size_t>(PrefetchResult::unchanged)];
        if (was > 0) --was;
        ++results[static_cast<std::size_t>(PrefetchResult::fetched)];
      }
    }
  }
  run->report.still_late = looks_unrefreshed(fetched, unchanged, run->report.baseline_share);
  if (run->report.late_waits > 0) {
    log::warn("prefetch_data_late",
              {{"boundary", unix_whole_seconds(run->day)},
               {"waits", run->report.late_waits},
               {"still_late", run->report.still_late},
               {"baseline_unchanged_share", run->report.baseline_share.value_or(0.0)}});
  }
}

asio::awaitable<void> PrefetchLeader::sleep_until(WallTime due, const Run& run) {
  asio::steady_timer timer(parts_.control);
  while (!run.stop && !stopping_) {
    const WallTime now = parts_.clock.wall_now();
    if (now >= due) co_return;
    timer.expires_after(std::min<std::chrono::milliseconds>(
        kLookEvery, std::chrono::ceil<std::chrono::milliseconds>(due - now)));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

asio::awaitable<void> PrefetchLeader::read_baseline(Run& run) {
  PrefetchReport& report = run.report;
  std::uint64_t fetched = 0;
  std::uint64_t unchanged = 0;
  for (unsigned days = 1; days <= kBaselineDays; ++days) {
    const std::int64_t day_ms = unix_millis(run.day - days * kDay);
    std::vector<std::string> args{"HMGET", parts_.keys.prefetch_progress(day_ms),
                                  std::string(metrics::to_string(PrefetchResult::fetched)),
                                  std::string(metrics::to_string(PrefetchResult::unchanged))};
    auto [ec, reply] = co_await parts_.redis.command(std::move(args));
    if (ec || reply.type != redis::Reply::Type::array || reply.elements.size() != 2) continue;
    const std::uint64_t day_fetched = number_or_zero(reply.elements[0].str);
    const std::uint64_t day_unchanged = number_or_zero(reply.elements[1].str);
    if (day_fetched + day_unchanged == 0) continue;
    fetched += day_fetched;
    unchanged += day_unchanged;
    ++report.baseline_days;
  }
  report.baseline_share = unchanged_share_of(fetched, unchanged);
}

asio::awaitable<void> PrefetchLeader::wait_leading(WallTime due, Run& run) {
  SteadyTime renewed = timer_now();
  asio::steady_timer timer(parts_.control);
  while (!run.stop && !stopping_ && parts_.clock.wall_now() < due) {
    timer.expires_after(kLookEvery);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (timer_now() - renewed < kRenewEvery) continue;
    renewed = timer_now();
    if (!co_await renew_lease()) {
      run.stop = true;
      run.paused = "lease_lost";
    }
  }
}

asio::awaitable<void> PrefetchLeader::save_progress(Run& run, bool done) {
  const std::int64_t day_ms = unix_millis(run.day);
  const std::string kept = std::to_string(std::chrono::milliseconds(kDemandKept).count());
  std::vector<std::string> hset{
      "HSET",  parts_.keys.prefetch_progress(day_ms),        "next", std::to_string(run.next),
      "spent", std::to_string(run.report.upstream_requests), "done", done ? "1" : "0"};
  for (std::size_t r = 0; r < metrics::kPrefetchResults; ++r) {
    hset.emplace_back(metrics::to_string(static_cast<PrefetchResult>(r)));
    hset.push_back(std::to_string(run.report.results[r]));
  }
  co_await parts_.redis.command(std::move(hset));
  std::vector<std::string> expire{"PEXPIRE", parts_.keys.prefetch_progress(day_ms),
                                  std::to_string(std::chrono::milliseconds(kProgressKept).count())};
  co_await parts_.redis.command(std::move(expire));
  if (!run.fetched_keys.empty()) {
    std::vector<std::string> sadd{"SADD", parts_.keys.prefetched(day_ms)};
    for (auto& key : run.fetched_keys) sadd.push_back(std::move(key));
    run.fetched_keys.clear();
    co_await parts_.redis.command(std::move(sadd));
    std::vector<std::string> expire_set{"PEXPIRE", parts_.keys.prefetched(day_ms), kept};
    co_await parts_.redis.command(std::move(expire_set));
  }
}

void PrefetchLeader::finish(Run& run) {
  run.report.took = std::chrono::duration_cast<std::chrono::milliseconds>(
      parts_.clock.steady_now() - run.started);
  const PrefetchReport& r = run.report;
  auto count = [&](PrefetchResult result) { return r.results[static_cast<std::size_t>(result)]; };
  // budget -1: no monthly limit, no cap. previous_*: the prefetch of the boundary before, judged
  // by that day's demand (0 when there was none).
  log::info("prefetch_done",
            {{"boundary", unix_whole_seconds(r.boundary)},
             {"keys", static_cast<std::uint64_t>(r.planned)},
             {"fetched", count(PrefetchResult::fetched) + count(PrefetchResult::unchanged)},
             {"unchanged", count(PrefetchResult::unchanged)},
             {"upstream_requests", r.upstream_requests},
             {"budget", r.budget ? static_cast<long long>(*r.budget) : -1LL},
             {"skipped_budget", count(PrefetchResult::budget)},
             {"skipped_stored", count(PrefetchResult::stored)},
             {"skipped_negative", count(PrefetchResult::negative)},
             {"skipped_empty", count(PrefetchResult::empty)},
             {"refused", count(PrefetchResult::refused)},
             {"failed", count(PrefetchResult::failed)},
             {"duration_ms", static_cast<long long>(r.took.count())},
             {"finished", r.finished},
             {"paused", r.paused},
             {"previous_fetched", r.previous_fetched},
             {"previous_wasted", r.wasted.value_or(0)},
             {"unchanged_share", r.unchanged_share.value_or(0.0)},
             {"baseline_unchanged_share", r.baseline_share.value_or(0.0)},
             {"baseline_days", r.baseline_days},
             {"late_data_waits", r.late_waits},
             {"still_late", r.still_late}});
  last_ = r;
}

}  // namespace wg::prefetch
