#pragma once
// The answer to one validated API request. The loop is thin: ask serve_policy's next_step()
// for the next step, perform it, fold its result into the facts, repeat. The rules live in
// serve_policy (docs/request-cost.md says how a request's cost is decided); the steps that do
// I/O are small types beside it: ProofLookup (what the widget data and the list ends prove),
// PageDeriver (a page cut from its windows), SharedFetch (one fetch per key for the fleet).
// Upstream failures are never cached.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "cache_tier.hpp"
#include "demand_counter.hpp"
#include "entry_forms.hpp"
#include "fetch_lock.hpp"
#include "known_widgets.hpp"
#include "list_ends.hpp"
#include "page_deriver.hpp"
#include "serve_policy.hpp"
#include "served.hpp"
#include "service_settings.hpp"
#include "shared_fetch.hpp"
#include "upstream_fetcher.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/tracing/tracer.hpp"
#include "widget_proof.hpp"

namespace wg::serving {

// What the synchronous first look at a request learned, for serve() to go on from: the key
// is computed and L1 read once per request.
struct FirstLook {
  std::string key;
  RequestFacts::Shape shape = RequestFacts::Shape::widget;
  std::shared_ptr<const cache::Entry> own;  // the L1 copy (not past stale_until), or null
  // What this worker keeps beside `own` in L1 (its answer heads), or null. Valid only until
  // the worker's L1 next changes: read on the hit path, in the call that looked.
  const cache::L1Annex* annex = nullptr;
  bool shared_missed = false;  // Redis was just asked for this key too, and had nothing
  bool needs_proof = false;    // a reviews key at skip >= 300 or with a type
  // What the widget data is known to prove already (a window of a page that consulted it).
  RequestFacts::Proof proof = RequestFacts::Proof::not_looked;
};

// Whether the client behind a request may cause an upstream request now (the per-IP limit),
// and look up an id not known to be valid (access.unknown_per_ip_rate). Hits never ask.
class Admission {
 public:
  virtual ~Admission() = default;
  virtual bool admit(std::chrono::seconds& retry_after) = 0;
  virtual bool admit_unknown(std::chrono::seconds& retry_after) = 0;
  // Gives back what admit_unknown() took: the lookup it allowed never reached upstream.
  virtual void refund_unknown() = 0;
};

struct ServiceDependencies {
  CacheTier& cache;
  UpstreamFetcher& fetcher;
  FetchLock& lock;
  KnownWidgets& known;
  redis::Client& redis;  // the worker's connection
  quota::QuotaCounter& quota;
  Clock& clock;
  RandomSource& random;
  metrics::GatewayMetrics* metrics = nullptr;
  SiblingCaches* siblings = nullptr;  // the process's other workers; null: none
  unsigned worker = 0;                // this worker's index, for `siblings`
  ListEnds* list_ends = nullptr;      // process-wide; null: list ends are not remembered
  tracing::Tracer* tracer = nullptr;  // this worker's; null: background refreshes are not traced
};

// Threads: one service per io worker; every member is called on that worker's thread.
class GatewayService {
 public:
  GatewayService(boost::asio::any_io_executor background, ServiceDependencies deps,
                 const config::Config& config);

  // The hit path without a coroutine: the answer when a fresh L1 copy settles the request
  // (no Redis, no quota, no lock); otherwise nullopt, and `look` holds what serve() goes on
  // from. `look` is filled anew, its key built in the buffer it has (a caller that keeps one
  // FirstLook for its hits allocates no key).
  std::optional<Served> serve_from_l1(const api::ApiRequest& request, FirstLook& look);

  // Everything else. `admission` (may be null) is asked before this request would go
  // upstream. `trace` (may be null): the request's trace, which its Redis lookups, waits and
  // upstream fetches join.
  boost::asio::awaitable<Served> serve(const api::ApiRequest& request, FirstLook look,
                                       Admission* admission = nullptr,
                                       const tracing::SpanContext* trace = nullptr);
  // Both steps, for callers without a hit path of their own (admin warm-up, tests).
  boost::asio::awaitable<Served> serve(const api::ApiRequest& request,
                                       Admission* admission = nullptr);

  // The prefetch after the daily refresh (docs/prefetch.md), for one key: nothing when its
  // adopted copy was stored since `boundary` (or another fetch stores one meanwhile: adopted),
  // when it is an unknown widget's, or when the widget data proves the window empty; otherwise
  // one fetch through the shared path (coalesced, the fetch lock, the guard, the quota,
  // last-known-good), as a refresh of the copy. `upstream_asked` says whether upstream was.
  struct Prefetched {
    metrics::PrefetchResult result = metrics::PrefetchResult::failed;
    bool upstream_asked = false;
    // Refused for every key alike (upstream's hold, an open circuit, the month spent): the
    // prefetch waits instead of going through its plan.
    bool everything_refused = false;
  };
  // `again`: a copy stored since the boundary is fetched anyway (it came back with the old
  // bytes while the vendor's new data was late).
  boost::asio::awaitable<Prefetched> prefetch(const api::ApiRequest& request, WallTime boundary,
                                              bool again = false);

  // Codings and body files made for answers (entry_forms.hpp).
  EntryForms& forms() { return forms_; }
  // Keeps `annex` beside `key`'s copy in this worker's L1 while it is `entry`
  // (cache::L1Cache::attach): the frontend's answer heads.
  void keep_beside(const std::string& key, const cache::Entry* entry,
                   std::unique_ptr<const cache::L1Annex> annex);
  // What visitors asked for since the control thread last took it (docs/prefetch.md).
  DemandCounter& demand() { return demand_; }

  // Applies reloadable settings (TTL policy, stale windows, derivation). On the service's own
  // thread (requests in flight keep the settings they started with).
  void update(const config::Config& config);

  std::size_t background_refreshes() const { return shared_fetch_.background_refreshes(); }

 private:
  struct KeyServing;

  // `key`: the request's key when the caller has it already ("" computes it).
  FirstLook first_look(const api::ApiRequest& request, const ServiceSettings& settings,
                       std::string key = {});
  // The same into `look`, all of it replaced; the key built into look.key's buffer unless
  // `key_known`.
  void fill_first_look(const api::ApiRequest& request, const ServiceSettings& settings,
                       FirstLook& look, bool key_known);
  bool early_due(RequestFacts::Shape shape, const cache::Entry* own, WallTime now);
  // The policy's loop for one key, until it answers.
  boost::asio::awaitable<Served> serve_key(const api::ApiRequest& request, FirstLook look,
                                           SettingsPtr settings, Admission* admission,
                                           const tracing::SpanContext* trace);

  // The steps. Those that answer return the answer; the others fold what they learn into the
  // facts.
  Served serve_own(KeyServing& s, const Step& step);
  Served answer_local(KeyServing& s, const Step& step);
  Served fail(KeyServing& s);
  boost::asio::awaitable<void> look_up_shared(KeyServing& s);
  boost::asio::awaitable<void> look_up_siblings(KeyServing& s);
  boost::asio::awaitable<void> look_up_proof(KeyServing& s);
  boost::asio::awaitable<void> look_up_proof_siblings(KeyServing& s);
  boost::asio::awaitable<void> obtain_proof(KeyServing& s);
  void check_refusal(KeyServing& s, const Step& step);
  boost::asio::awaitable<void> look_up_known(KeyServing& s);
  void admit(KeyServing& s, const Step& step);
  boost::asio::awaitable<std::optional<Served>> walk_list(KeyServing& s);
  boost::asio::awaitable<std::optional<Served>> derive(KeyServing& s);
  boost::asio::awaitable<std::optional<Served>> fetch(KeyServing& s, const Step& step);

  // A failed or refused fetch, classified once (failure_answer), into the facts.
  void fold_failure(KeyServing& s, const FailureAnswer& answer, const Step& step,
                    std::chrono::seconds retry_after, std::error_code upstream_error = {});
  // The copy it has is newer news of the key: its own copy from now on.
  void take_own(KeyServing& s, std::shared_ptr<const cache::Entry> entry);
  // What the widget data proves, as found by the latest look: into the facts.
  void take_proof(KeyServing& s, LocalProof proof);

  boost::asio::any_io_executor background_;
  ServiceDependencies deps_;
  ProofLookup proofs_;
  SharedFetch shared_fetch_;
  PageDeriver pages_;
  SettingsPtr settings_;  // replaced by update() on the service's thread only
  EntryForms forms_;
  DemandCounter demand_;
};

}  // namespace wg::serving
