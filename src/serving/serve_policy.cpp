#include "serve_policy.hpp"

#include <algorithm>
#include <optional>

#include "widget_gateway/common/error.hpp"

namespace wg::serving {

namespace {

using Action = Step::Action;
using Shape = RequestFacts::Shape;
using Failure = RequestFacts::Failure;

bool consults_proof(const RequestFacts& f) {
  return f.shape == Shape::page || f.shape == Shape::derived ||
         (f.shape == Shape::window && f.needs_proof);
}

StaleReason reason_of(Failure failure) {
  switch (failure) {
    case Failure::quota_exhausted:
      return StaleReason::quota_exhausted;
    case Failure::paced:
      return StaleReason::widget_paced;
    case Failure::none:
    case Failure::refused:
    case Failure::upstream:
      break;
  }
  return StaleReason::if_error;
}

bool fresh(const cache::Entry* entry, WallTime now) {
  return entry != nullptr && now < entry->fresh_until;
}

// Finding the widget data behind a page's proof: looked up once (L1, then Redis); while Redis
// is down and this worker has none, asked of the other workers before anything goes upstream.
std::optional<Step> proof_lookup(const RequestFacts& f) {
  if (f.proof_state == RequestFacts::Proof::not_looked) return Step{Action::look_up_proof};
  if (f.proof_state == RequestFacts::Proof::absent && f.proof_unavailable &&
      !f.proof_siblings_looked) {
    return Step{Action::look_up_proof_siblings};
  }
  return std::nullopt;
}

// A page whose list is to be walked up first: a derived page at once (its copy is no answer),
// a page of its own once neither L1 nor Redis holds a copy (a copy is refreshed as it is).
bool walks_now(const RequestFacts& f) {
  if (f.shape == Shape::derived) return true;
  return f.shape == Shape::page && f.own == nullptr && f.own_looked == RequestFacts::Own::l1_and_l2;
}

// After a failed or refused fetch: the key's own stale copy, else (pages) the widget data's
// proof within the same windows, else the error.
Step after_failure(const RequestFacts& f) {
  const bool quota = f.failure == Failure::quota_exhausted;
  const StaleReason reason = reason_of(f.failure);
  // A refused or paced request gets any stale copy there is; a failed fetch the copy it was
  // allowed to fall back on, and while the quota is spent, any copy short of stale_until.
  // (A derived page has no copy of its own to fall back on: its windows fall back on theirs.)
  const bool may_use_own =
      f.failure == Failure::refused || f.failure == Failure::paced || f.fallback || quota;
  if (f.shape != Shape::derived && f.own != nullptr && f.now < f.own->stale_until && may_use_own) {
    return {Action::serve_own, reason};
  }
  if (!consults_proof(f)) return {Action::fail};
  if (std::optional<Step> lookup = proof_lookup(f)) return *lookup;
  if (f.proof_state != RequestFacts::Proof::holds || f.proof->status != 200) return {Action::fail};
  // The same windows as for a stale copy of the page itself.
  const auto window =
      quota ? std::max(f.windows.if_error, f.windows.while_revalidate) : f.windows.if_error;
  if (f.now >= f.proof->fresh_until + window) return {Action::fail};
  return {Action::answer_local, reason};
}

}  // namespace

std::string_view detail_of(Outcome::Detail detail) {
  switch (detail) {
    case Outcome::Detail::none:
      return "";
    case Outcome::Detail::derived:
      return "derived";
    case Outcome::Detail::local:
      return "local";
    case Outcome::Detail::stale_while_revalidate:
    case Outcome::Detail::stale_if_error:
    case Outcome::Detail::quota_exhausted:
    case Outcome::Detail::quota_economy:
    case Outcome::Detail::widget_paced:
      break;
    case Outcome::Detail::unconfirmed:
      return "unconfirmed";
    case Outcome::Detail::empty_on_error:
      return "empty-on-error";
  }
  Outcome outcome;
  outcome.detail = detail;
  return to_string(outcome.stale());
}

StaleReason Outcome::stale() const {
  switch (detail) {
    case Detail::stale_while_revalidate:
      return StaleReason::while_revalidate;
    case Detail::stale_if_error:
      return StaleReason::if_error;
    case Detail::quota_exhausted:
      return StaleReason::quota_exhausted;
    case Detail::quota_economy:
      return StaleReason::quota_economy;
    case Detail::widget_paced:
      return StaleReason::widget_paced;
    case Detail::none:
    case Detail::derived:
    case Detail::local:
    case Detail::unconfirmed:
    case Detail::empty_on_error:
      break;
  }
  return StaleReason::none;
}

Outcome::Detail Outcome::detail_for(Detail kind, StaleReason stale) {
  if (kind == Detail::unconfirmed && stale != StaleReason::quota_exhausted) return kind;
  switch (stale) {
    case StaleReason::none:
      return kind;
    case StaleReason::while_revalidate:
      return Detail::stale_while_revalidate;
    case StaleReason::if_error:
      return Detail::stale_if_error;
    case StaleReason::quota_exhausted:
      return Detail::quota_exhausted;
    case StaleReason::quota_economy:
      return Detail::quota_economy;
    case StaleReason::widget_paced:
      return Detail::widget_paced;
  }
  return kind;
}

ServeDecision decide(const cache::Entry* entry, WallTime now, quota::Mode mode,
                     const StaleWindows& windows, bool early_refresh) {
  using DecisionAction = ServeDecision::Action;
  if (entry == nullptr || now >= entry->stale_until)
    return {DecisionAction::fetch, StaleReason::none, false};

  if (now < entry->fresh_until) {
    const bool refresh = early_refresh && mode == quota::Mode::normal;
    return {refresh ? DecisionAction::serve_and_refresh : DecisionAction::serve, StaleReason::none,
            false};
  }
  // Negative entries have no stale window (stale_until == fresh_until), so only data is here.
  switch (mode) {
    case quota::Mode::exhausted:
      return {DecisionAction::serve, StaleReason::quota_exhausted, false};
    case quota::Mode::economy:
      return {DecisionAction::serve, StaleReason::quota_economy, false};
    case quota::Mode::normal:
      break;
  }
  // A copy a soft purge made stale is served while it is refreshed for as long as Redis keeps
  // it: no request waits for upstream because of a soft purge.
  if (now < entry->fresh_until + windows.while_revalidate || entry->soft_purged) {
    return {DecisionAction::serve_and_refresh, StaleReason::while_revalidate, false};
  }
  const bool rescue = now < entry->fresh_until + windows.if_error;
  return {DecisionAction::fetch, StaleReason::none, rescue};
}

bool early_refresh_due(const cache::Entry& entry, WallTime now) {
  return entry.early_at != WallTime{} && !entry.hold && entry.early_at <= now &&
         now < entry.fresh_until;
}

bool answers_empty_on_error(api::Endpoint endpoint, api::ErrorCode code, bool enabled) {
  if (!enabled || endpoint != api::Endpoint::reviews) return false;
  const unsigned status = api::error_info(code, endpoint).status;
  return status == 429 || status >= 500;
}

bool needs_quota_mode(const RequestFacts& f) {
  if (f.own != nullptr) {
    if (f.now >= f.own->fresh_until) return true;
    if (f.early_due && f.shape != Shape::derived) return true;
  }
  return f.proof_state == RequestFacts::Proof::holds && !fresh(f.proof_widget, f.now);
}

Step next_step(const RequestFacts& f) {
  if (f.failure != Failure::none) return after_failure(f);

  // A fresh copy in L1: the hit path. Derived pages are never refreshed early themselves
  // (their windows are).
  if (f.own_looked == RequestFacts::Own::l1 && fresh(f.own, f.now)) {
    if (f.shape == Shape::derived || !f.early_due) return {Action::serve_own};
    const ServeDecision d = decide(f.own, f.now, f.mode, f.windows, true);
    return {d.action == ServeDecision::Action::serve_and_refresh ? Action::serve_own_refresh
                                                                 : Action::serve_own};
  }

  // What the cached widget data proves about a page, under the widget data's own rules.
  if (consults_proof(f)) {
    if (std::optional<Step> lookup = proof_lookup(f)) return *lookup;
    if (f.proof_state == RequestFacts::Proof::holds) {
      if (fresh(f.proof_widget, f.now)) return {Action::answer_local};
      const ServeDecision d = decide(f.proof_widget, f.now, f.mode, f.windows, false);
      if (d.action == ServeDecision::Action::serve) return {Action::answer_local, d.stale};
      if (d.action == ServeDecision::Action::serve_and_refresh) {
        return {Action::answer_local_refresh, d.stale};
      }
      // Too old to answer without asking: the page is fetched (the proof may still rescue it).
    } else if (f.walk_due && !f.walked && walks_now(f)) {
      return {Action::walk_list};
    }
  }
  if (f.shape == Shape::derived) return {Action::derive};

  if (f.own_looked == RequestFacts::Own::l1) {
    if (f.own == nullptr) return {Action::look_up_shared};
    // A stale copy about to be served while revalidating is not looked up again: the refresh
    // reads Redis first (under the lock), and a read here would fetch the whole entry from
    // Redis on every request for a stale key, which an outage with many stale keys cannot
    // afford. Otherwise another instance may have refreshed it meanwhile.
    const ServeDecision d = decide(f.own, f.now, f.mode, f.windows, false);
    if (d.action == ServeDecision::Action::serve_and_refresh) {
      return {Action::serve_own_refresh, d.stale};
    }
    return {Action::look_up_shared};
  }

  // Redis is down and this worker never saw the key: a sibling worker may have, which spares
  // an upstream call (workers fill their L1s from Redis, not from one another).
  if (f.own == nullptr && f.shared_unavailable && !f.siblings_looked) {
    return {Action::look_up_siblings};
  }
  const ServeDecision d = decide(f.own, f.now, f.mode, f.windows, f.early_due);
  switch (d.action) {
    case ServeDecision::Action::serve:
      return {Action::serve_own, d.stale};
    case ServeDecision::Action::serve_and_refresh:
      return {Action::serve_own_refresh, d.stale};
    case ServeDecision::Action::fetch:
      break;
  }
  // Nothing cached proves this key's list reaches it: the widget data comes first (one call,
  // shared by every key of the widget), so that a walk past the end of a list, or over the
  // platforms the widget lacks, costs that one call. A stale copy of the key itself is proof
  // enough that it is worth refreshing.
  if (f.own == nullptr && f.needs_proof && f.proof_state == RequestFacts::Proof::absent &&
      !f.proof_obtained) {
    return {Action::obtain_proof};
  }
  // What could refuse it, cheapest and most telling first: the fetcher's refusal names a spent
  // quota before anything else, and costs no Redis round trip.
  if (!f.refusal_checked) return {Action::check_refusal, StaleReason::none, d.fallback};
  if (!f.known_looked) return {Action::look_up_known, StaleReason::none, d.fallback};
  if (f.client_limits && !f.joining && !f.admitted) {
    return {Action::admit, StaleReason::none, d.fallback};
  }
  return {Action::fetch, StaleReason::none, d.fallback};
}

FailureAnswer failure_answer(const std::error_code& ec) {
  using Failure = RequestFacts::Failure;
  using Code = api::ErrorCode;
  using Reason = metrics::RefusalReason;
  // The refusals first, each with the words a client (and the operator reading its report)
  // needs: which limit, and when to come back.
  if (ec == errc::quota_exhausted) {
    return {Failure::quota_exhausted, Code::quota_exhausted, {}, Reason::quota_exhausted};
  }
  if (ec == errc::widget_paced) {
    return {Failure::paced, Code::service_unavailable,
            "upstream requests for this widget are paced: it spent its bound for this period "
            "(quota.widget_slack)",
            Reason::widget_paced};
  }
  if (ec == errc::upstream_rate_limited) {
    return {Failure::upstream, Code::rate_limited,
            "upstream asked to wait (its own 429 and Retry-After); try again after Retry-After",
            Reason::upstream_rate_limited};
  }
  if (ec == errc::upstream_unavailable) {
    return {Failure::upstream, Code::service_unavailable,
            "upstream is unavailable and asked to wait (its own 503 and Retry-After); try again "
            "after Retry-After",
            Reason::upstream_unavailable};
  }
  if (ec == errc::unknown_budget_exhausted) {
    return {Failure::upstream, Code::rate_limited,
            "this month's budget for widget ids upstream does not know is spent "
            "(quota.unknown_share)",
            Reason::unknown_budget};
  }
  if (ec == errc::circuit_open) {
    // The contract's 502 for an open circuit, told apart from a failure that just happened.
    return {Failure::upstream, Code::upstream_error,
            "upstream circuit open after repeated upstream failures: no request was sent; try "
            "again after Retry-After",
            Reason::circuit_open};
  }
  if (ec == errc::upstream_busy) {
    return {Failure::upstream, Code::service_unavailable,
            "too many upstream requests in flight and waiting (upstream.max_in_flight, "
            "upstream.max_queued); retry",
            Reason::upstream_busy};
  }
  if (ec == errc::quota_unavailable) {
    return {Failure::upstream, Code::service_unavailable,
            "the quota cannot grant a request: this instance's lease is spent and Redis is "
            "unreachable; retry",
            Reason::quota_unavailable};
  }
  if (ec == errc::overloaded) {
    return {Failure::upstream, Code::service_unavailable,
            "too many requests already waiting for this answer from upstream; retry",
            Reason::fetch_waiters_full};
  }
  // Upstream failed: the code's own words.
  if (ec == errc::upstream_timeout) return {Failure::upstream, Code::upstream_timeout, {}, {}};
  return {Failure::upstream, Code::upstream_error, {}, {}};
}

FailureAnswer failure_answer(ClientLimit limit) {
  using Reason = metrics::RefusalReason;
  switch (limit) {
    case ClientLimit::upstream_requests:
      return {RequestFacts::Failure::refused, api::ErrorCode::rate_limited,
              "too many upstream requests from this client (access.per_ip_rate)",
              Reason::client_rate};
    case ClientLimit::unknown_ids:
      break;
  }
  return {RequestFacts::Failure::refused, api::ErrorCode::rate_limited,
          "too many lookups of widget ids not known to be valid from this client "
          "(access.unknown_per_ip_rate)",
          Reason::client_unknown_rate};
}

bool refunds_unknown_token(const RequestFacts& f) {
  return f.client_limits && f.admitted && !f.widget_known &&
         f.failure != RequestFacts::Failure::none && !f.upstream_reached;
}

bool widget_paced(std::uint64_t spent, std::uint64_t bound, std::uint64_t slack) {
  return spent >= bound + slack;
}

}  // namespace wg::serving
