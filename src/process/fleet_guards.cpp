#include "process/fleet_guards.hpp"

#include <unistd.h>

#include <cstdio>
#include <limits>

#include "widget_gateway/common/log.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/eviction_policy.hpp"
#include "widget_gateway/quota/lease_file.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::process {
namespace asio = boost::asio;

namespace {

// The circuit's first pause after it opens; each failed probe doubles it up to
// upstream.circuit_open_for. A blip of a few seconds then costs about a second of 502s for
// uncached keys (and of not refreshing stale ones), not a whole circuit_open_for.
constexpr std::chrono::milliseconds kFirstCircuitPause{1000};

// This process's name in the quota's lease ledger: the host and a random suffix, so that
// instances on one host, and restarts, never share a ledger by accident.
std::string instance_name(RandomSource& random) {
  char host[256] = "gateway";
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "gateway");
  host[sizeof host - 1] = '\0';
  for (char* c = host; *c; ++c) {
    if (*c == ' ' || *c == ':') *c = '-';
  }
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x",
                static_cast<unsigned>(random.uniform01() * 4294967296.0));
  return std::string(host) + "-" + suffix;
}

}  // namespace

FleetGuards::FleetGuards(FleetClock& clock, const config::Config& config, const KeySpace& keys,
                         RandomSource& random, std::function<void(bool open)> circuit_changed)
    : clock_(clock),
      state_file_(config.quota.state_file),
      quota_(clock, config.quota, instance_name(random), keys),
      breaker_(
          config.upstream.circuit_failures,
          std::chrono::duration_cast<std::chrono::milliseconds>(config.upstream.circuit_open_for),
          [circuit_changed = std::move(circuit_changed)](upstream::CircuitBreaker::State,
                                                         upstream::CircuitBreaker::State to) {
            const bool open = to != upstream::CircuitBreaker::State::closed;
            circuit_changed(open);
            // Opening is news an operator acts on; closing again is the all-clear.
            log::event(open ? log::Level::warn : log::Level::info, "circuit",
                       {{"state", upstream::to_string(to)}});
          },
          kFirstCircuitPause),
      known_widgets_(keys) {}

std::chrono::seconds FleetGuards::hold_left() const {
  return hold_.at(clock_.steady_now()).left;
}

void FleetGuards::restore_lease() {
  if (state_file_.empty()) return;
  if (auto state = quota::take_lease_state(state_file_)) {
    quota_.restore(*state);
    log::info("quota_lease_restored", {{"instance", state->instance}, {"path", state_file_}});
  }
}

asio::awaitable<void> FleetGuards::report_once(redis::Client& redis) {
  if (!policy_checked_) policy_checked_ = co_await quota::warn_if_quota_evictable(redis);
  co_await redis::observe_time(redis, clock_);  // the fleet's clock, kept
  co_await quota_.report(redis);
  co_await known_widgets_.flush(redis);
}

asio::awaitable<void> FleetGuards::settle(redis::Client& redis) {
  co_await known_widgets_.flush(redis);
  co_await release_lease(redis);
}

// Gives the unspent lease back, then writes quota.state_file (a small blocking write, after
// every worker has stopped serving): what Redis could not take, and in any case the fleet's
// spending as last seen, which the next start sends as its high-water mark.
asio::awaitable<void> FleetGuards::release_lease(redis::Client& redis) {
  const bool settled = co_await quota_.release(redis);
  const quota::LeaseState state = quota_.lease_state();
  const bool saved = !state_file_.empty() && quota::save_lease_state(state_file_, state);
  if (settled) {
    if (saved) log::info("quota_state_saved", {{"path", state_file_}});
    co_return;
  }
  std::uint64_t unspent = 0;
  for (const auto& [month, ledger] : state.ledgers) unspent += ledger.left();
  const bool unreported = quota_.snapshot().unreported;
  if (saved) {
    log::warn("quota_lease_saved", {{"path", state_file_}, {"unspent", unspent}});
  } else {
    // Never over the limit: what is unreported stays counted as leased in Redis.
    log::warn("quota_lease_unreturned",
              {{"instance", state.instance}, {"unspent", unspent}, {"unreported", unreported}});
  }
}

void FleetGuards::apply(const config::QuotaConfig& quota) {
  const quota::Mode before = quota_.snapshot().mode;
  quota_.set_config(quota);
  const quota::Mode after = quota_.snapshot().mode;
  if (after != before) {
    log::warn("quota_mode", {{"mode", quota::to_string(after)}, {"cause", "reload"}});
  }
}

void FleetGuards::describe(metrics::ScrapeSources& sources) const {
  const quota::QuotaCounter& quota = quota_;
  sources.quota_used = [&quota] { return static_cast<double>(quota.snapshot().used); };
  sources.quota_limit = [&quota] { return static_cast<double>(quota.snapshot().limit); };
  // With no limit nothing runs out: +Inf, as /admin/quota's null, never a 0 that looks spent.
  sources.quota_remaining = [&quota] {
    const auto remaining = quota.snapshot().remaining();
    return remaining ? static_cast<double>(*remaining) : std::numeric_limits<double>::infinity();
  };
  sources.quota_leased = [&quota] { return static_cast<double>(quota.snapshot().leased); };
  sources.quota_unknown_used = [&quota] {
    return static_cast<double>(quota.snapshot().unknown_used);
  };
  sources.quota_unknown_limit = [&quota] {
    return static_cast<double>(quota.snapshot().unknown_limit.value_or(0));
  };
  sources.quota_resets_at = [&quota] { return unix_seconds(quota.snapshot().resets_at); };
  sources.quota_projected_month_end = [&quota] {
    return static_cast<double>(quota.snapshot().projected_month_end);
  };
  sources.quota_mode = [&quota] { return quota.snapshot().mode; };
}

}  // namespace wg::process
