#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "serving/serve_policy.hpp"
#include "widget_gateway/common/error.hpp"

// Every serving rule, as a table: the facts a request has gathered so far, and the one step
// next_step() must choose.

namespace wg::serving {
inline std::ostream& operator<<(std::ostream& os, const Step& step) {
  return os << "Step{action " << static_cast<int>(step.action) << ", stale "
            << static_cast<int>(step.stale) << ", fallback " << step.fallback << "}";
}
}  // namespace wg::serving

namespace {

using namespace wg;
using namespace wg::serving;
using namespace std::chrono_literals;
using Action = Step::Action;
using Shape = RequestFacts::Shape;
using Own = RequestFacts::Own;
using Proof = RequestFacts::Proof;
using Failure = RequestFacts::Failure;

const WallTime kNow = WallTime{} + 1000h;
const StaleWindows kWindows{10min, 24h};

// An entry that became stale `stale_for` ago (negative: fresh for that much longer); data
// stays servable for two days past freshness (longer than stale-if-error).
cache::Entry entry(std::chrono::milliseconds stale_for, std::uint16_t status = 200) {
  cache::Entry e;
  e.status = status;
  e.stored_at = kNow - stale_for - 1h;
  e.fresh_until = kNow - stale_for;
  e.stale_until = status == 200 ? e.fresh_until + 48h : e.fresh_until;
  return e;
}

const cache::Entry kFresh = entry(-30min);
const cache::Entry kStaleInSwr = entry(5min);
const cache::Entry kStaleInSie = entry(2h);
const cache::Entry kStalePastSie = entry(25h - 1min);  // still before stale_until
const cache::Entry kNegativeExpired = entry(1min, 404);
// Stale beyond both windows, but a soft purge made it so: still served while it is refreshed.
const cache::Entry kSoftPurged = [] {
  cache::Entry e = entry(25h - 1min);
  e.soft_purged = true;
  return e;
}();
const cache::Entry kEmptyPage = [] {
  cache::Entry e = entry(-30min);
  e.body = "[]";
  return e;
}();

struct PolicyRow {
  std::string name;
  RequestFacts facts;
  Step expected;
};
std::ostream& operator<<(std::ostream& os, const PolicyRow& row) {
  return os << row.name;
}

RequestFacts facts(Shape shape, Own looked, const cache::Entry* own) {
  RequestFacts f;
  f.shape = shape;
  f.now = kNow;
  f.windows = kWindows;
  f.own_looked = looked;
  f.own = own;
  return f;
}

RequestFacts unavailable(RequestFacts f) {
  f.shared_unavailable = true;
  return f;
}
RequestFacts siblings_asked(RequestFacts f) {
  f.siblings_looked = true;
  return f;
}
RequestFacts with_mode(RequestFacts f, quota::Mode mode) {
  f.mode = mode;
  return f;
}
RequestFacts early(RequestFacts f) {
  f.early_due = true;
  return f;
}
// The widget data `widget` proves the page with `answer`.
RequestFacts proven(RequestFacts f, const cache::Entry* widget, const cache::Entry* answer) {
  f.proof_state = Proof::holds;
  f.proof_widget = widget;
  f.proof = answer;
  return f;
}
RequestFacts unproven(RequestFacts f) {
  f.proof_state = Proof::none;
  return f;
}
// The proof says the page's list is to be walked up to it first; and the walk was made.
RequestFacts walking(RequestFacts f) {
  f.walk_due = true;
  return f;
}
RequestFacts walked(RequestFacts f) {
  f.walked = true;
  return f;
}
// A key at skip >= 300 or with a type: fetched only once the widget data is in hand.
RequestFacts needing_proof(RequestFacts f, Proof state = Proof::not_looked) {
  f.needs_proof = true;
  f.proof_state = state;
  return f;
}
// Redis did not answer for the widget data, and this worker has none.
RequestFacts proof_unreadable(RequestFacts f) {
  f.proof_state = Proof::absent;
  f.proof_unavailable = true;
  return f;
}
RequestFacts proof_siblings_asked(RequestFacts f) {
  f.proof_siblings_looked = true;
  return f;
}
RequestFacts obtained(RequestFacts f, Proof state) {
  f.proof_obtained = true;
  f.proof_state = state;
  return f;
}
RequestFacts with_refusal_checked(RequestFacts f) {
  f.refusal_checked = true;
  return f;
}
RequestFacts with_client_limits(RequestFacts f) {
  f.client_limits = true;
  return f;
}
RequestFacts joining(RequestFacts f) {
  f.joining = true;
  return f;
}
RequestFacts admitted(RequestFacts f) {
  f.admitted = true;
  return f;
}
// Nothing refuses the fetch: the fetcher's refusal asked, the widget known to be looked up.
RequestFacts cleared(RequestFacts f) {
  f.refusal_checked = true;
  f.known_looked = true;
  return f;
}
RequestFacts failed(RequestFacts f, Failure failure, bool fallback = false) {
  f.failure = failure;
  f.fallback = fallback;
  return f;
}

// A proof made from widget data `widget` shares its times.
cache::Entry proof_of(const cache::Entry& widget, std::uint16_t status = 200) {
  cache::Entry e = widget;
  e.status = status;
  e.body = status == 200 ? "[]" : "";
  return e;
}
const cache::Entry kProofFresh = proof_of(kFresh);
const cache::Entry kProofSwr = proof_of(kStaleInSwr);
const cache::Entry kProofSie = proof_of(kStaleInSie);
const cache::Entry kProofUnknown = proof_of(kFresh, 400);

const std::vector<PolicyRow> kRows = {
    // The key's own copy: fresh in L1 (the hit path).
    {"fresh L1 copy: served", facts(Shape::widget, Own::l1, &kFresh), {Action::serve_own}},
    {"fresh L1 copy, early draw: served and refreshed",
     early(facts(Shape::widget, Own::l1, &kFresh)),
     {Action::serve_own_refresh}},
    {"fresh L1 copy, early draw in economy: served only",
     with_mode(early(facts(Shape::widget, Own::l1, &kFresh)), quota::Mode::economy),
     {Action::serve_own}},
    {"fresh derived page, early draw: never refreshed itself",
     early(facts(Shape::derived, Own::l1, &kFresh)),
     {Action::serve_own}},
    {"fresh L1 window-shaped page: served before any proof",
     facts(Shape::page, Own::l1, &kFresh),
     {Action::serve_own}},
    // L1 has nothing usable: Redis next.
    {"no L1 copy: look in Redis", facts(Shape::widget, Own::l1, nullptr), {Action::look_up_shared}},
    {"stale L1 copy within swr: served stale, refreshed, Redis not read",
     facts(Shape::widget, Own::l1, &kStaleInSwr),
     {Action::serve_own_refresh, StaleReason::while_revalidate}},
    {"stale L1 copy beyond swr: Redis may have a newer one",
     facts(Shape::widget, Own::l1, &kStaleInSie),
     {Action::look_up_shared}},
    {"soft-purged copy past both windows: served stale, refreshed (no visitor waits)",
     facts(Shape::widget, Own::l1_and_l2, &kSoftPurged),
     {Action::serve_own_refresh, StaleReason::while_revalidate}},
    {"soft-purged copy, quota spent: served, not refreshed",
     with_mode(facts(Shape::widget, Own::l1_and_l2, &kSoftPurged), quota::Mode::exhausted),
     {Action::serve_own, StaleReason::quota_exhausted}},
    {"stale L1 copy, quota spent: Redis may have a newer one",
     with_mode(facts(Shape::widget, Own::l1, &kStaleInSie), quota::Mode::exhausted),
     {Action::look_up_shared}},
    {"window (for a page): no proof consulted",
     facts(Shape::window, Own::l1, nullptr),
     {Action::look_up_shared}},
    // After Redis.
    {"nothing anywhere: fetch",
     cleared(facts(Shape::widget, Own::l1_and_l2, nullptr)),
     {Action::fetch}},
    {"fresh Redis copy: served",
     facts(Shape::widget, Own::l1_and_l2, &kFresh),
     {Action::serve_own}},
    {"fresh Redis copy, early draw: served and refreshed",
     early(facts(Shape::widget, Own::l1_and_l2, &kFresh)),
     {Action::serve_own_refresh}},
    {"stale within swr: served stale and refreshed",
     facts(Shape::widget, Own::l1_and_l2, &kStaleInSwr),
     {Action::serve_own_refresh, StaleReason::while_revalidate}},
    {"stale beyond swr, within stale-if-error: fetch, may fall back",
     cleared(facts(Shape::widget, Own::l1_and_l2, &kStaleInSie)),
     {Action::fetch, StaleReason::none, true}},
    {"stale beyond stale-if-error: fetch, no fall-back",
     cleared(facts(Shape::widget, Own::l1_and_l2, &kStalePastSie)),
     {Action::fetch}},
    {"stale, quota economy: served stale, no refresh",
     with_mode(facts(Shape::widget, Own::l1_and_l2, &kStaleInSie), quota::Mode::economy),
     {Action::serve_own, StaleReason::quota_economy}},
    {"stale, quota exhausted: served stale",
     with_mode(facts(Shape::widget, Own::l1_and_l2, &kStalePastSie), quota::Mode::exhausted),
     {Action::serve_own, StaleReason::quota_exhausted}},
    {"Redis down, nothing in this worker: ask the other workers",
     unavailable(facts(Shape::widget, Own::l1_and_l2, nullptr)),
     {Action::look_up_siblings}},
    {"Redis down, no worker has it: fetch",
     cleared(siblings_asked(unavailable(facts(Shape::widget, Own::l1_and_l2, nullptr)))),
     {Action::fetch}},
    {"Redis down, a stale copy here: its own rules, no sibling asked",
     cleared(unavailable(facts(Shape::widget, Own::l1_and_l2, &kStaleInSie))),
     {Action::fetch, StaleReason::none, true}},
    {"expired negative entry: no stale window, fetch",
     cleared(facts(Shape::widget, Own::l1_and_l2, &kNegativeExpired)),
     {Action::fetch}},
    // Pages: the widget data's proof comes before the page's own lookups.
    {"page without L1 copy: consult the widget data",
     facts(Shape::page, Own::l1, nullptr),
     {Action::look_up_proof}},
    {"page with a stale L1 copy: consult the widget data",
     facts(Shape::page, Own::l1, &kStaleInSwr),
     {Action::look_up_proof}},
    {"page, nothing proven: its own copy in Redis",
     unproven(facts(Shape::page, Own::l1, nullptr)),
     {Action::look_up_shared}},
    {"page proven by fresh widget data: answered locally",
     proven(facts(Shape::page, Own::l1, nullptr), &kFresh, &kProofFresh),
     {Action::answer_local}},
    {"page proven by unknown-widget data: answered locally (400)",
     proven(facts(Shape::page, Own::l1, nullptr), &kFresh, &kProofUnknown),
     {Action::answer_local}},
    {"page proven by widget data within swr: stale proof, widget data refreshed",
     proven(facts(Shape::page, Own::l1, nullptr), &kStaleInSwr, &kProofSwr),
     {Action::answer_local_refresh, StaleReason::while_revalidate}},
    {"page proven by widget data beyond swr: the page is asked for",
     proven(facts(Shape::page, Own::l1, nullptr), &kStaleInSie, &kProofSie),
     {Action::look_up_shared}},
    {"page proven by stale widget data, quota exhausted: stale proof",
     with_mode(proven(facts(Shape::page, Own::l1, nullptr), &kStaleInSie, &kProofSie),
               quota::Mode::exhausted),
     {Action::answer_local, StaleReason::quota_exhausted}},
    {"derived page, nothing proven: derive",
     unproven(facts(Shape::derived, Own::l1, nullptr)),
     {Action::derive}},
    {"derived page, stale L1 copy, nothing proven: derive (the copy is no answer)",
     unproven(facts(Shape::derived, Own::l1, &kStaleInSwr)),
     {Action::derive}},
    {"derived page of a list only windows measure: walk up to it first",
     walking(unproven(facts(Shape::derived, Own::l1, &kStaleInSwr))),
     {Action::walk_list}},
    {"derived page, walked: derive",
     walked(walking(unproven(facts(Shape::derived, Own::l1, nullptr)))),
     {Action::derive}},
    {"page of a list only windows measure, not in L1: Redis first",
     walking(unproven(facts(Shape::page, Own::l1, nullptr))),
     {Action::look_up_shared}},
    {"page of a list only windows measure, in neither tier: walk up to it first",
     walking(unproven(facts(Shape::page, Own::l1_and_l2, nullptr))),
     {Action::walk_list}},
    {"page of a list only windows measure, walked, still unproven: fetch it",
     with_refusal_checked(walked(walking(unproven(facts(Shape::page, Own::l1_and_l2, nullptr))))),
     {Action::look_up_known}},
    {"page of a list only windows measure with a stale copy: refreshed as it is, no walk",
     walking(unproven(facts(Shape::page, Own::l1, &kStaleInSwr))),
     {Action::serve_own_refresh, StaleReason::while_revalidate}},
    {"page, Redis down and no widget data here: ask the other workers for it",
     proof_unreadable(facts(Shape::page, Own::l1, nullptr)),
     {Action::look_up_proof_siblings}},
    {"derived page, Redis down and no widget data here: ask the other workers for it",
     proof_unreadable(facts(Shape::derived, Own::l1, nullptr)),
     {Action::look_up_proof_siblings}},
    {"page, no worker has the widget data: its own copy next",
     proof_siblings_asked(proof_unreadable(facts(Shape::page, Own::l1, nullptr))),
     {Action::look_up_shared}},
    {"derived page, no worker has the widget data: derive",
     proof_siblings_asked(proof_unreadable(facts(Shape::derived, Own::l1, nullptr))),
     {Action::derive}},
    {"page, widget data missed in Redis (it answered): no worker asked",
     needing_proof(facts(Shape::page, Own::l1, nullptr), Proof::absent),
     {Action::look_up_shared}},
    {"derived page proven by fresh widget data: answered locally",
     proven(facts(Shape::derived, Own::l1, nullptr), &kFresh, &kProofFresh),
     {Action::answer_local}},
    // Failures.
    {"fetch failed, own copy within stale-if-error: served stale",
     failed(facts(Shape::widget, Own::l1_and_l2, &kStaleInSie), Failure::upstream, true),
     {Action::serve_own, StaleReason::if_error}},
    {"fetch failed, no fall-back allowed: error",
     failed(facts(Shape::widget, Own::l1_and_l2, &kStalePastSie), Failure::upstream),
     {Action::fail}},
    {"fetch failed, nothing cached: error",
     failed(facts(Shape::widget, Own::l1_and_l2, nullptr), Failure::upstream),
     {Action::fail}},
    {"quota refused the fetch: any copy short of stale_until",
     failed(facts(Shape::widget, Own::l1_and_l2, &kStalePastSie), Failure::quota_exhausted),
     {Action::serve_own, StaleReason::quota_exhausted}},
    {"client refused: any stale copy, as stale-if-error",
     failed(facts(Shape::widget, Own::l1_and_l2, &kStalePastSie), Failure::refused),
     {Action::serve_own, StaleReason::if_error}},
    {"client refused, nothing cached: error",
     failed(facts(Shape::widget, Own::l1_and_l2, nullptr), Failure::refused),
     {Action::fail}},
    {"page fetch failed: rescued by widget data within stale-if-error",
     failed(proven(facts(Shape::page, Own::l1_and_l2, nullptr), &kStaleInSie, &kProofSie),
            Failure::upstream),
     {Action::answer_local, StaleReason::if_error}},
    {"page fetch failed: an unknown-widget proof rescues nothing",
     failed(proven(facts(Shape::page, Own::l1_and_l2, nullptr), &kFresh, &kProofUnknown),
            Failure::upstream),
     {Action::fail}},
    {"page fetch failed, proof not consulted yet: consult it",
     failed(facts(Shape::page, Own::l1_and_l2, nullptr), Failure::upstream),
     {Action::look_up_proof}},
    {"page fetch failed, Redis down, no widget data here: the other workers' may rescue it",
     failed(proof_unreadable(facts(Shape::page, Own::l1_and_l2, nullptr)), Failure::upstream),
     {Action::look_up_proof_siblings}},
    {"page fetch failed, no worker has the widget data: error",
     failed(proof_siblings_asked(proof_unreadable(facts(Shape::page, Own::l1_and_l2, nullptr))),
            Failure::upstream),
     {Action::fail}},
    {"derived page's window failed: no own copy to fall back on, proof rescues",
     failed(proven(facts(Shape::derived, Own::l1, &kStaleInSwr), &kStaleInSie, &kProofSie),
            Failure::refused),
     {Action::answer_local, StaleReason::if_error}},
    {"derived page's window failed, nothing proven: error",
     failed(unproven(facts(Shape::derived, Own::l1, &kStaleInSwr)), Failure::quota_exhausted),
     {Action::fail}},
    {"window failed: no proof of its own, error",
     failed(facts(Shape::window, Own::l1_and_l2, nullptr), Failure::upstream),
     {Action::fail}},
    // The proof before a fetch: keys at skip >= 300 or with a type.
    {"window needing the proof, not consulted: consult the widget data",
     needing_proof(facts(Shape::window, Own::l1, nullptr)),
     {Action::look_up_proof}},
    {"window needing the proof, no widget data: its own copy in Redis first",
     needing_proof(facts(Shape::window, Own::l1, nullptr), Proof::absent),
     {Action::look_up_shared}},
    {"window needing the proof, nothing anywhere: obtain the widget data",
     needing_proof(facts(Shape::window, Own::l1_and_l2, nullptr), Proof::absent),
     {Action::obtain_proof}},
    {"page needing the proof, nothing anywhere: obtain the widget data",
     needing_proof(facts(Shape::page, Own::l1_and_l2, nullptr), Proof::absent),
     {Action::obtain_proof}},
    {"window needing the proof, Redis down, no widget data here: ask the other workers",
     proof_unreadable(needing_proof(facts(Shape::window, Own::l1, nullptr))),
     {Action::look_up_proof_siblings}},
    {"window needing the proof, Redis down and no worker has either: obtain the widget data",
     siblings_asked(unavailable(proof_siblings_asked(
         proof_unreadable(needing_proof(facts(Shape::window, Own::l1_and_l2, nullptr)))))),
     {Action::obtain_proof}},
    {"window needing the proof, widget data proves nothing: fetch",
     cleared(needing_proof(facts(Shape::window, Own::l1_and_l2, nullptr), Proof::none)),
     {Action::fetch}},
    {"window needing the proof, obtained, it proves the window empty: answered locally",
     proven(obtained(needing_proof(facts(Shape::window, Own::l1_and_l2, nullptr)), Proof::holds),
            &kFresh, &kProofFresh),
     {Action::answer_local}},
    {"window needing the proof, obtained, it proves nothing: fetch",
     cleared(obtained(needing_proof(facts(Shape::window, Own::l1_and_l2, nullptr)), Proof::none)),
     {Action::fetch}},
    {"obtained but still absent (unreadable widget data): fetch, never a second widget call",
     cleared(obtained(needing_proof(facts(Shape::window, Own::l1_and_l2, nullptr)), Proof::absent)),
     {Action::fetch}},
    {"the widget data's fetch failed: its error is the answer, no call for the key",
     failed(obtained(needing_proof(facts(Shape::window, Own::l1_and_l2, nullptr)), Proof::absent),
            Failure::upstream),
     {Action::fail}},
    {"the widget data's fetch was refused by the quota: the quota's error",
     failed(obtained(needing_proof(facts(Shape::page, Own::l1_and_l2, nullptr)), Proof::absent),
            Failure::quota_exhausted),
     {Action::fail}},
    {"a stale copy of the key is proof enough that it exists: refreshed without the proof",
     cleared(needing_proof(facts(Shape::window, Own::l1_and_l2, &kStaleInSie), Proof::absent)),
     {Action::fetch, StaleReason::none, true}},
    {"untyped window 0: fetched straight away, as cheap as the widget data",
     cleared(facts(Shape::window, Own::l1_and_l2, nullptr)),
     {Action::fetch}},
    // Before a fetch: the fetcher's refusal, whether the widget is known, the client's limits.
    {"a fetch is due: the fetcher's refusal first (the quota names itself before all else)",
     facts(Shape::widget, Own::l1_and_l2, nullptr),
     {Action::check_refusal}},
    {"a stale copy within stale-if-error: the refusal check carries the fall-back",
     facts(Shape::widget, Own::l1_and_l2, &kStaleInSie),
     {Action::check_refusal, StaleReason::none, true}},
    {"not refused: is the widget known?",
     with_refusal_checked(facts(Shape::widget, Own::l1_and_l2, nullptr)),
     {Action::look_up_known}},
    {"the client's limits apply: ask them",
     with_client_limits(cleared(facts(Shape::widget, Own::l1_and_l2, nullptr))),
     {Action::admit}},
    {"the client's limits apply, but the fetch is under way here: joining costs nothing",
     joining(with_client_limits(cleared(facts(Shape::widget, Own::l1_and_l2, nullptr)))),
     {Action::fetch}},
    {"admitted: fetch",
     admitted(with_client_limits(cleared(facts(Shape::widget, Own::l1_and_l2, nullptr)))),
     {Action::fetch}},
    {"refused by the quota (at the check), a stale copy: served stale",
     failed(with_refusal_checked(facts(Shape::widget, Own::l1_and_l2, &kStalePastSie)),
            Failure::quota_exhausted),
     {Action::serve_own, StaleReason::quota_exhausted}},
    {"refused by the quota, nothing cached: its error",
     failed(with_refusal_checked(facts(Shape::widget, Own::l1_and_l2, nullptr)),
            Failure::quota_exhausted),
     {Action::fail}},
    // The per-widget guard.
    {"paced, a stale copy: served stale (widget-paced)",
     failed(facts(Shape::widget, Own::l1_and_l2, &kStalePastSie), Failure::paced),
     {Action::serve_own, StaleReason::widget_paced}},
    {"paced, nothing cached: error",
     failed(facts(Shape::window, Own::l1_and_l2, nullptr), Failure::paced),
     {Action::fail}},
    {"paced page: rescued by widget data within stale-if-error",
     failed(proven(facts(Shape::page, Own::l1_and_l2, nullptr), &kStaleInSie, &kProofSie),
            Failure::paced),
     {Action::answer_local, StaleReason::widget_paced}},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(serve_policy_test)

BOOST_DATA_TEST_CASE(next_step_follows_the_rules, boost::unit_test::data::make(kRows), row) {
  BOOST_TEST(next_step(row.facts) == row.expected);
}

BOOST_AUTO_TEST_CASE(a_spent_quota_rescues_pages_for_as_long_as_the_longer_stale_window) {
  // stale-if-error off, stale-while-revalidate 10 min: a page whose widget data went stale 5
  // minutes ago is rescued while the quota is spent, not after an upstream error.
  RequestFacts f = proven(facts(Shape::page, Own::l1_and_l2, nullptr), &kStaleInSwr, &kProofSwr);
  f.windows = {10min, 0ms};
  BOOST_TEST(next_step(failed(f, Failure::quota_exhausted)) ==
             (Step{Action::answer_local, StaleReason::quota_exhausted}));
  BOOST_TEST(next_step(failed(f, Failure::upstream)) == Step{Action::fail});
}

BOOST_AUTO_TEST_CASE(the_quota_is_read_only_for_stale_copies_and_early_refreshes) {
  BOOST_TEST(!needs_quota_mode(facts(Shape::widget, Own::l1, &kFresh)));
  BOOST_TEST(!needs_quota_mode(facts(Shape::widget, Own::l1, nullptr)));
  BOOST_TEST(needs_quota_mode(early(facts(Shape::widget, Own::l1, &kFresh))));
  BOOST_TEST(!needs_quota_mode(early(facts(Shape::derived, Own::l1, &kFresh))));
  BOOST_TEST(needs_quota_mode(facts(Shape::widget, Own::l1_and_l2, &kStaleInSwr)));
  BOOST_TEST(
      !needs_quota_mode(proven(facts(Shape::page, Own::l1, nullptr), &kFresh, &kProofFresh)));
  BOOST_TEST(
      needs_quota_mode(proven(facts(Shape::page, Own::l1, nullptr), &kStaleInSwr, &kProofSwr)));
}

BOOST_AUTO_TEST_CASE(failures_are_classified_in_one_place) {
  using Code = wg::api::ErrorCode;
  using Reason = wg::metrics::RefusalReason;
  // A refusal has its reason and words of its own that name what refused (`names`); a real
  // upstream failure has neither.
  auto check = [](wg::errc e, Failure failure, Code code, std::optional<Reason> reason,
                  std::string_view names) {
    const FailureAnswer a = failure_answer(make_error_code(e));
    BOOST_TEST_CONTEXT(static_cast<int>(e)) {
      BOOST_TEST((a.failure == failure));
      BOOST_TEST((a.code == code));
      BOOST_TEST((a.reason == reason));
      BOOST_TEST(a.message.empty() == names.empty());
      BOOST_TEST(a.message.find(names) != std::string_view::npos, a.message);
    }
  };
  // The default words of quota_exhausted name the monthly quota already.
  check(wg::errc::quota_exhausted, Failure::quota_exhausted, Code::quota_exhausted,
        Reason::quota_exhausted, "");
  check(wg::errc::widget_paced, Failure::paced, Code::service_unavailable, Reason::widget_paced,
        "quota.widget_slack");
  check(wg::errc::upstream_rate_limited, Failure::upstream, Code::rate_limited,
        Reason::upstream_rate_limited, "its own 429 and Retry-After");
  check(wg::errc::upstream_unavailable, Failure::upstream, Code::service_unavailable,
        Reason::upstream_unavailable, "its own 503 and Retry-After");
  check(wg::errc::unknown_budget_exhausted, Failure::upstream, Code::rate_limited,
        Reason::unknown_budget, "quota.unknown_share");
  check(wg::errc::circuit_open, Failure::upstream, Code::upstream_error, Reason::circuit_open,
        "upstream circuit open");
  check(wg::errc::upstream_busy, Failure::upstream, Code::service_unavailable,
        Reason::upstream_busy, "upstream.max_in_flight");
  check(wg::errc::quota_unavailable, Failure::upstream, Code::service_unavailable,
        Reason::quota_unavailable, "Redis is unreachable");
  check(wg::errc::overloaded, Failure::upstream, Code::service_unavailable,
        Reason::fetch_waiters_full, "already waiting");
  check(wg::errc::upstream_timeout, Failure::upstream, Code::upstream_timeout, std::nullopt, "");
  check(wg::errc::upstream_bad_status, Failure::upstream, Code::upstream_error, std::nullopt, "");
  check(wg::errc::upstream_connect_failed, Failure::upstream, Code::upstream_error, std::nullopt,
        "");
  check(wg::errc::upstream_invalid_body, Failure::upstream, Code::upstream_error, std::nullopt, "");
  for (ClientLimit limit : {ClientLimit::upstream_requests, ClientLimit::unknown_ids}) {
    const FailureAnswer a = failure_answer(limit);
    BOOST_TEST((a.failure == Failure::refused));
    BOOST_TEST((a.code == Code::rate_limited));
  }
  BOOST_TEST((failure_answer(ClientLimit::upstream_requests).reason == Reason::client_rate));
  BOOST_TEST(failure_answer(ClientLimit::upstream_requests).message.find("access.per_ip_rate") !=
             std::string_view::npos);
  BOOST_TEST((failure_answer(ClientLimit::unknown_ids).reason == Reason::client_unknown_rate));
  BOOST_TEST(failure_answer(ClientLimit::unknown_ids).message.find("unknown_per_ip_rate") !=
             std::string_view::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_id_token_goes_back_when_its_request_never_reached_upstream) {
  const RequestFacts unknown =
      admitted(with_client_limits(cleared(facts(Shape::widget, Own::l1_and_l2, nullptr))));
  RequestFacts known = unknown;
  known.widget_known = true;
  RequestFacts reached = failed(unknown, Failure::upstream);
  reached.upstream_reached = true;
  RequestFacts not_admitted = failed(unknown, Failure::refused);
  not_admitted.admitted = false;
  RequestFacts admin = failed(unknown, Failure::upstream);  // the admin listener: no limits
  admin.client_limits = false;
  admin.admitted = false;
  const struct {
    const char* what;
    RequestFacts facts;
    bool refund;
  } rows[] = {
      {"failed before upstream (quota unavailable, Redis down)", failed(unknown, Failure::upstream),
       true},
      {"quota exhausted at the fetch", failed(unknown, Failure::quota_exhausted), true},
      {"paced by the guard", failed(unknown, Failure::paced), true},
      {"upstream answered with an error", reached, false},
      {"not failed", unknown, false},
      {"a known widget took no unknown-id token", failed(known, Failure::upstream), false},
      {"refused by the client's limits: nothing was taken", not_admitted, false},
      {"no client limits", admin, false},
  };
  for (const auto& row : rows) {
    BOOST_TEST(refunds_unknown_token(row.facts) == row.refund, row.what);
  }
}

BOOST_AUTO_TEST_CASE(the_guard_paces_past_the_bound_plus_the_slack) {
  BOOST_TEST(!widget_paced(0, 1, 0));
  BOOST_TEST(widget_paced(1, 1, 0));
  BOOST_TEST(!widget_paced(5, 4, 2));
  BOOST_TEST(widget_paced(6, 4, 2));
  BOOST_TEST(widget_paced(100, 4, 2));
}

BOOST_AUTO_TEST_CASE(outcome_detail_holds_one_value_and_stale_wins) {
  using Detail = Outcome::Detail;
  BOOST_TEST((Outcome::detail_for(Detail::derived, StaleReason::none) == Detail::derived));
  BOOST_TEST((Outcome::detail_for(Detail::local, StaleReason::if_error) == Detail::stale_if_error));
  BOOST_TEST((Outcome::detail_for(Detail::derived, StaleReason::while_revalidate) ==
              Detail::stale_while_revalidate));
  BOOST_TEST(
      (Outcome::detail_for(Detail::none, StaleReason::quota_economy) == Detail::quota_economy));
  for (StaleReason reason :
       {StaleReason::none, StaleReason::while_revalidate, StaleReason::if_error,
        StaleReason::quota_exhausted, StaleReason::quota_economy}) {
    Outcome outcome;
    outcome.detail = Outcome::detail_for(Detail::local, reason);
    BOOST_TEST((outcome.stale() == reason));
    if (reason != StaleReason::none) BOOST_TEST(detail_of(outcome.detail) == to_string(reason));
  }
  BOOST_TEST(detail_of(Detail::derived) == "derived");
  BOOST_TEST(detail_of(Detail::local) == "local");
  BOOST_TEST(detail_of(Detail::quota_exhausted) == "quota-exhausted");
}

BOOST_AUTO_TEST_CASE(unconfirmed_copies_outrank_every_stale_reason_but_a_spent_quota) {
  using Detail = Outcome::Detail;
  BOOST_TEST((Outcome::detail_for(Detail::unconfirmed, StaleReason::none) == Detail::unconfirmed));
  for (StaleReason reason : {StaleReason::while_revalidate, StaleReason::if_error,
                             StaleReason::quota_economy, StaleReason::widget_paced}) {
    BOOST_TEST((Outcome::detail_for(Detail::unconfirmed, reason) == Detail::unconfirmed));
  }
  BOOST_TEST((Outcome::detail_for(Detail::unconfirmed, StaleReason::quota_exhausted) ==
              Detail::quota_exhausted));
  BOOST_TEST(detail_of(Detail::unconfirmed) == "unconfirmed");
  BOOST_TEST(detail_of(Detail::empty_on_error) == "empty-on-error");
  Outcome unconfirmed;
  unconfirmed.detail = Detail::unconfirmed;
  BOOST_TEST((unconfirmed.stale() == StaleReason::none));
}

BOOST_AUTO_TEST_CASE(an_early_refresh_is_due_from_its_moment_until_expiry) {
  cache::Entry e = kFresh;                  // fresh until kNow + 30 min
  BOOST_TEST(!early_refresh_due(e, kNow));  // no moment drawn: never (derived pages, old copies)
  e.early_at = kNow + 10min;
  BOOST_TEST(!early_refresh_due(e, kNow));
  BOOST_TEST(early_refresh_due(e, kNow + 10min));
  BOOST_TEST(early_refresh_due(e, kNow + 29min));
  BOOST_TEST(!early_refresh_due(e, kNow + 30min));  // stale: the stale rules take over
  e.hold = cache::Hold{kNow, false};
  BOOST_TEST(!early_refresh_due(e, kNow + 20min));  // a hold waits for its confirmation
}

BOOST_AUTO_TEST_CASE(an_empty_review_block_stands_in_for_429_and_5xx_only) {
  using api::Endpoint;
  using api::ErrorCode;
  for (ErrorCode code :
       {ErrorCode::quota_exhausted, ErrorCode::rate_limited, ErrorCode::upstream_error,
        ErrorCode::upstream_timeout, ErrorCode::service_unavailable}) {
    BOOST_TEST(answers_empty_on_error(Endpoint::reviews, code, true));
    BOOST_TEST(!answers_empty_on_error(Endpoint::reviews, code, false));  // off by default
    BOOST_TEST(!answers_empty_on_error(Endpoint::widget, code, true));    // widget data: never
  }
  for (ErrorCode code : {ErrorCode::widget_not_found, ErrorCode::limit_too_large,
                         ErrorCode::bad_request, ErrorCode::not_found}) {
    BOOST_TEST(!answers_empty_on_error(Endpoint::reviews, code, true));
  }
}

BOOST_AUTO_TEST_SUITE_END()  // serve_policy_test
