#pragma once
// How one API request is answered, as a pure function of what is known about it. The gateway
// service gathers facts (L1, Redis, the widget data, a fetch's result), asks next_step() what
// to do, does it, and asks again: every serving rule lives here and nowhere else.
//
// Rules for the key's own copy, in order:
//   fresh                          serve; in normal mode, from the copy's early_at on, also
//                                  refresh it (XFetch, drawn once when it was fetched)
//   stale, quota exhausted         serve stale (no upstream call is possible)
//   stale, quota economy           serve stale: freshness is extended up to stale_until
//   stale, within swr window       serve stale now and refresh in the background (a copy a
//                                  soft purge made stale: until its stale_until)
//   stale, beyond swr              fetch; if upstream fails, serve stale (stale-if-error)
//   nothing usable                 fetch; failures are errors
//   before a fetch                 the fetcher's refusal first (the quota, whose 429
//                                  quota_exhausted wins over every other refusal; upstream's
//                                  hold; the circuit), then whether the widget is known, then
//                                  the client's limits (not for a request joining a fetch
//                                  already under way); a refusal serves a stale copy, else
//                                  the error; past them the per-widget guard (in the fetch)
// Around them, for reviews pages:
//   answer locally                 cached widget data proves the page (an empty page past the
//                                  end or for a platform the widget lacks; every page of an
//                                  unknown widget), under the widget data's own rules above
//   derive                         a page that is not window-shaped is cut from aligned
//                                  300-review windows, each an ordinary key
//   walk up                        a page with no copy of a list only windows measure (a
//                                  platform the widget data names only in sources), past the
//                                  windows known full: those windows come first, upward, until
//                                  one ends the list; then the proof is asked again
//   obtain the proof               a key at skip >= 300 or with a type is fetched only once
//                                  the widget data is in hand: when neither is cached, the
//                                  widget data is fetched first (one shared call), and what it
//                                  proves is asked again; its failure is the answer
//   ask the other workers          Redis is down and this worker has no copy of the key, or of
//                                  the widget data a proof needs: another worker's L1 may
//                                  have one, which spares an upstream call
//   rescue                         a page whose fetch failed is still answered from stale
//                                  widget data that proves it (stale-if-error, and while the
//                                  quota is spent)
//   empty on error                 a reviews request left with a 429 or 5xx and no copy:
//                                  200 [] when cache.empty_reviews_on_error is on
//
// Outcome is the one value that says how an answer was produced; the response (Cache-Status),
// the metrics, the access log and the admin listener all read it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/cache/stale_reason.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/mode.hpp"

namespace wg::serving {

using cache::StaleReason;

struct StaleWindows {
  std::chrono::milliseconds while_revalidate{0};
  std::chrono::milliseconds if_error{0};
};

// How an answer was produced (RFC 9211's fwd, stored and detail, in one value).
struct Outcome {
  enum class Source : std::uint8_t {
    cache,      // nobody went upstream for it
    upstream,   // fetched upstream by this request
    collapsed,  // fetched by a concurrent request of this worker that this one waited for
  };
  // One value, as Cache-Status' detail: quota-exhausted wins over unconfirmed, unconfirmed
  // over the other stale reasons, and a stale reason over derived and local.
  enum class Detail : std::uint8_t {
    none,
    derived,  // cut from review windows
    local,    // proven by cached widget data, no upstream call
    stale_while_revalidate,
    stale_if_error,
    quota_exhausted,
    quota_economy,
    widget_paced,
    unconfirmed,     // the copy holds back an upstream answer (docs/freshness.md)
    empty_on_error,  // no copy and an error: 200 [] (cache.empty_reviews_on_error)
  };
  Source source = Source::cache;
  bool stored = false;  // a fetched entry reached the shared cache
  Detail detail = Detail::none;

  StaleReason stale() const;
  // The detail for an answer built as `kind` (none, derived, local, or unconfirmed: from a copy
  // that holds back an answer) and served for `stale`.
  static Detail detail_for(Detail kind, StaleReason stale);
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

// Cache-Status' detail value ("derived", "local", "stale-while-revalidate", ...; "" for none).
std::string_view detail_of(Outcome::Detail detail);

// The rules for one stored copy, given the time and the quota mode.
struct ServeDecision {
  enum class Action {
    serve,              // answer from the entry
    serve_and_refresh,  // answer from the entry, refresh it in the background
    fetch,              // go upstream now (coalesced); `fallback` says if the entry may rescue
  };
  Action action = Action::fetch;
  StaleReason stale = StaleReason::none;  // for serve*: why the entry is served although stale
  bool fallback = false;                  // for fetch: serve the entry if the fetch fails
};
// `early_refresh`: an early refresh is due for a fresh entry (ignored otherwise).
ServeDecision decide(const cache::Entry* entry, WallTime now, quota::Mode mode,
                     const StaleWindows& windows, bool early_refresh);

// Whether a request at `now` starts the early refresh of a fresh copy: from its early_at
// (drawn once when it was fetched, cache::TtlPolicy::early_refresh_at) until its fresh_until;
// never for a copy that holds back an answer (its confirmation is due at fresh_until), nor one
// without an early moment (derived pages, local answers, copies from earlier versions).
bool early_refresh_due(const cache::Entry& entry, WallTime now);

// Whether a reviews request that would be answered with `code` (as an error) gets 200 [] instead:
// cache.empty_reviews_on_error is on and the error is a 429 or a 5xx. Widget data keeps its
// errors, and so does every 4xx the client can mend.
bool answers_empty_on_error(api::Endpoint endpoint, api::ErrorCode code, bool enabled);

// What the service knows about one request when it asks for the next step.
struct RequestFacts {
  enum class Shape : std::uint8_t {
    widget,   // widget data
    page,     // a reviews page answered as its own key (window-shaped, or derivation off)
    derived,  // a reviews page cut from windows
    window,   // a window fetched to derive a page from (the page consulted the proof already)
  };
  enum class Own : std::uint8_t { l1, l1_and_l2 };  // where the key's own copy was looked for
  enum class Proof : std::uint8_t {
    not_looked,  // the widget data was not consulted yet
    absent,      // no widget data is cached (nor a window fact): nothing is proven
    none,        // it proves nothing about this page
    holds,       // `proof` answers the page; `proof_widget` is the widget data behind it
  };
  enum class Failure : std::uint8_t {
    none,
    refused,          // this client's share of upstream requests is used (admission)
    upstream,         // the fetch (or a window's, or the widget data's for the proof) failed
    quota_exhausted,  // the fetch was refused by the quota
    paced,            // the per-widget guard paces the widget: no call for this key now
  };

  Shape shape = Shape::widget;
  WallTime now{};
  StaleWindows windows;
  quota::Mode mode = quota::Mode::normal;  // filled only when needs_quota_mode() says so
  bool early_due = false;                  // an early refresh of the fresh copy is due

  Own own_looked = Own::l1;
  const cache::Entry* own = nullptr;  // the key's copy (not past stale_until), or null
  bool shared_unavailable = false;    // the Redis lookup failed (Redis down), not a miss
  bool siblings_looked = false;       // the other workers' L1 copies were asked

  // A reviews key whose fetch needs the widget data's proof first (skip >= 300 or a type).
  bool needs_proof = false;
  bool proof_obtained = false;  // the widget data was fetched for this request (obtain_proof)
  Proof proof_state = Proof::not_looked;
  bool proof_unavailable = false;              // absent because Redis did not answer (not a miss)
  bool proof_siblings_looked = false;          // the other workers were asked for the widget data
  const cache::Entry* proof = nullptr;         // the local answer (200 [] or 400)
  const cache::Entry* proof_widget = nullptr;  // the widget data it comes from
  // The proof says the page's list must be walked up to it first (cache::walk_from), and the
  // walk is this request's to make (a page asked for while cache.derive_pages is on).
  bool walk_due = false;
  bool walked = false;  // the walk was made (the proof was asked again after it)

  // Before a fetch.
  bool refusal_checked = false;   // the fetcher's refusal (quota, hold, circuit) was asked
  bool known_looked = false;      // whether upstream knows the widget was looked up
  bool widget_known = false;      // it does (allowlisted, a 200 copy in hand, remembered)
  bool joining = false;           // a fetch of the key is under way here: joining costs nothing
  bool client_limits = false;     // the client's limits apply (the public listener)
  bool admitted = false;          // the client's limits let this request go upstream
  bool upstream_reached = false;  // this request's own fetch made an upstream exchange

  Failure failure = Failure::none;
  bool fallback = false;  // the fetch that failed was allowed to fall back on the own copy
};

struct Step {
  enum class Action : std::uint8_t {
    serve_own,               // answer from the key's own copy
    serve_own_refresh,       // the same, and refresh the key in the background
    answer_local,            // answer from the proof (kept in L1 when the widget data is fresh)
    answer_local_refresh,    // the same (stale proof), and refresh the widget data
    look_up_shared,          // read the key from Redis (L2)
    look_up_siblings,        // Redis is down: ask the process's other workers for their copy
    look_up_proof,           // consult the cached widget data
    look_up_proof_siblings,  // Redis is down: ask the other workers for the widget data
    derive,                  // cut the page from its windows
    walk_list,               // serve the list's windows below the page, upward, then consult
                             // the widget data again
    obtain_proof,            // fetch the widget data (as its own key), then consult it again
    check_refusal,           // ask the fetcher whether it would refuse at once (quota, hold,
                             // circuit); `fallback` as for fetch
    look_up_known,           // whether upstream knows the widget (then whether the key's fetch
                             // is already under way here)
    admit,                   // ask the client's limits; `fallback` as for fetch
    fetch,                   // ask the client's admission, then go upstream (coalesced);
                             // `fallback`: the own copy may rescue a failure
    fail,                    // answer the failure as an error
  };
  Action action = Action::fail;
  StaleReason stale = StaleReason::none;  // for serve_own*, answer_local*
  bool fallback = false;                  // for fetch
  friend bool operator==(const Step&, const Step&) = default;
};

// Whether next_step() needs `mode`: only for stale copies and early refreshes, so a fresh hit
// never reads the quota. (Before a fetch the quota speaks through the fetcher's refusal.)
bool needs_quota_mode(const RequestFacts& facts);

Step next_step(const RequestFacts& facts);

// What a failed or refused fetch answers: its class for the rules above, the API's error code,
// for a refusal the gateway chose itself its reason (metrics and the access log carry it), and
// a message that says in words which limit refused or what failed. The one place a fetch's
// error is classified; a real upstream failure has no reason and keeps the code's message.
struct FailureAnswer {
  RequestFacts::Failure failure = RequestFacts::Failure::upstream;
  api::ErrorCode code = api::ErrorCode::upstream_error;
  std::string_view message;                      // static; empty: the code's default message
  std::optional<metrics::RefusalReason> reason;  // nullopt: not a refusal (upstream failed)
};
FailureAnswer failure_answer(const std::error_code& ec);

// Whether the unknown-id token the client's limits took for this request (admitted, the widget
// not known) goes back: it pays for one upstream lookup of an id, and a request that failed
// before reaching upstream (quota unavailable with Redis down, the guard, a busy worker) made
// none.
bool refunds_unknown_token(const RequestFacts& facts);

// The client's limits' refusals (RequestFacts::client_limits), by the limit that refused.
enum class ClientLimit : std::uint8_t { upstream_requests, unknown_ids };
FailureAnswer failure_answer(ClientLimit limit);

// The per-widget guard: whether a widget that has stored `spent` fetches in the current
// freshness period, against its `bound` (cache::upstream_bound), is paced before one more.
bool widget_paced(std::uint64_t spent, std::uint64_t bound, std::uint64_t slack);

}  // namespace wg::serving
