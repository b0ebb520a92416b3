#include "gateway_service.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/early_refresh.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/compress/compress.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/pacing.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxWaitersPerKey = 10000;
constexpr std::size_t kMaxBackgroundRefreshes = 256;
// XFetch's delta: roughly what a refresh costs. Hot keys get refreshed within the last few
// multiples of it before they expire; cold keys practically never early.
constexpr std::chrono::milliseconds kRefreshCost{2000};

api::ErrorCode error_code_for(const std::error_code& ec) {
  if (ec == errc::upstream_timeout) return api::ErrorCode::upstream_timeout;
  if (ec == errc::quota_exhausted) return api::ErrorCode::quota_exhausted;
  if (ec == errc::upstream_rate_limited || ec == errc::unknown_budget_exhausted) {
    return api::ErrorCode::rate_limited;
  }
  if (ec == errc::overloaded || ec == errc::upstream_unavailable || ec == errc::upstream_busy ||
      ec == errc::quota_unavailable || ec == errc::widget_paced) {
    return api::ErrorCode::service_unavailable;
  }
  return api::ErrorCode::upstream_error;
}

// Which limit refused, where the error code alone does not say (a 429 rate_limited has three
// causes; a 503 several). Empty: the code's default message.
std::string_view message_for(const std::error_code& ec) {
  if (ec == errc::upstream_rate_limited) {
    return "upstream asked to wait (its own Retry-After); try again after Retry-After";
  }
  if (ec == errc::unknown_budget_exhausted) {
    return "this month's budget for widget ids upstream does not know is spent "
           "(quota.unknown_share)";
  }
  if (ec == errc::widget_paced) {
    return "upstream requests for this widget are paced: it spent its bound for this period "
           "(quota.widget_slack)";
  }
  return {};
}

RequestFacts::Failure failure_of(const std::error_code& ec) {
  if (ec == errc::quota_exhausted) return RequestFacts::Failure::quota_exhausted;
  if (ec == errc::widget_paced) return RequestFacts::Failure::paced;
  return RequestFacts::Failure::upstream;
}

// The per-client limits' refusals (Admission), by the limit that refused.
constexpr std::string_view kClientLimit =
    "too many upstream requests from this client (access.per_ip_rate)";
constexpr std::string_view kUnknownClientLimit =
    "too many lookups of widget ids not known to be valid from this client "
    "(access.unknown_per_ip_rate)";

bool is_window_request(const api::ApiRequest& request) {
  return request.query.limit == cache::kWindowSize && request.query.skip % cache::kWindowSize == 0;
}

// A window's elements: from the offsets recorded when it was fetched or first parsed here,
// else parsed (a window read from Redis, or stored by another instance), and the offsets kept
// on the entry (this worker's own) for the next page cut from it. `parsed` says whether it was.
std::optional<std::vector<std::string_view>> window_elements(const cache::Entry& window,
                                                             bool& parsed) {
  parsed = false;
  if (window.element_spans) {
    if (auto elements = cache::elements_from_spans(window.body, *window.element_spans)) {
      return elements;
    }
  }
  auto summary = upstream::inspect_reviews_body(window.body);
  if (!summary) return std::nullopt;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;
  spans.reserve(summary->elements.size());
  for (std::string_view element : summary->elements) {
    spans.emplace_back(static_cast<std::uint32_t>(element.data() - window.body.data()),
                       static_cast<std::uint32_t>(element.size()));
  }
  window.element_spans = std::move(spans);
  parsed = true;
  return std::move(summary->elements);
}

std::shared_ptr<const cache::Entry> make_local_entry(std::string body, const cache::Entry& basis,
                                                     std::uint16_t status, WallTime now) {
  auto entry = std::make_shared<cache::Entry>();
  entry->status = status;
  entry->stored_at = now;
  entry->fresh_until = basis.fresh_until;
  entry->stale_until = basis.fresh_until;  // a proof from fresh data only; no stale window
  if (status == 200) entry->etag = cache::strong_etag(body);
  entry->proven = true;
  entry->body = std::move(body);
  return entry;
}

}  // namespace

GatewayService::GatewayService(asio::any_io_executor background, ServiceDependencies deps,
                               const config::Config& config)
    : background_(std::move(background)),
      deps_(deps),
      coalescer_(kMaxWaitersPerKey),
      on_demand_(compress::kOnDemandBytesPerSecond, compress::kOnDemandBurstBytes) {
  update(config);
}

void GatewayService::update(const config::Config& config) {
  // A lock holder gives up after one full upstream exchange; a waiter in this process may wait
  // for a leader that first waited for another instance's lock and then fetched itself.
  auto lock_ttl =
      config.upstream.connect_timeout + config.upstream.timeout + std::chrono::seconds(1);
  auto wait = lock_ttl * 2 + config.redis.timeout * 4 + std::chrono::seconds(1);
  FetchSettings fetch{cache::TtlPolicy(config.cache), config.cache.negative_ttl.count() > 0,
                      std::chrono::seconds(60)};
  fetch.queue_wait = config.upstream.timeout;
  Settings settings{std::move(fetch),
                    StaleWindows{config.cache.stale_while_revalidate, config.cache.stale_if_error},
                    config.cache.derive_pages,
                    !config.access.widgets.empty(),
                    config.quota.pacing,
                    config.quota.economy_at,
                    std::chrono::duration_cast<std::chrono::milliseconds>(wait),
                    std::chrono::duration_cast<std::chrono::milliseconds>(lock_ttl),
                    config.quota.widget_slack,
                    config.quota.widget_pace,
                    nullptr};
  Settings for_windows = settings;
  for_windows.fetch.compress = false;
  settings.windows = std::make_shared<const Settings>(std::move(for_windows));
  settings_ = std::make_shared<const Settings>(std::move(settings));
}

quota::Mode GatewayService::quota_mode(const Settings& settings) const {
  quota::Snapshot snapshot = deps_.quota.snapshot();
  if (snapshot.mode == quota::Mode::normal && settings.pacing && snapshot.limit > 0) {
    auto period = quota::quota_period(deps_.clock.wall_now(), snapshot.utc_offset);
    if (!quota::pacing_allows(snapshot.used + snapshot.leased, snapshot.limit,
                              deps_.clock.wall_now(), period)) {
      return quota::Mode::economy;
    }
  }
  return snapshot.mode;
}

FirstLook GatewayService::first_look(const api::ApiRequest& request, const Settings& settings) {
  using Shape = RequestFacts::Shape;
  FirstLook look;
  look.key = api::cache_key(request);
  if (request.endpoint == api::Endpoint::widget) {
    look.shape = Shape::widget;
  } else {
    look.shape =
        settings.derive_pages && !is_window_request(request) ? Shape::derived : Shape::page;
  }
  look.own = deps_.cache.find_local(look.key);
  look.needs_proof = request.endpoint == api::Endpoint::reviews &&
                     (request.query.skip >= cache::kWindowSize || request.query.type.has_value());
  return look;
}

namespace {

RequestFacts facts_for(const FirstLook& look, WallTime now, const StaleWindows& windows) {
  RequestFacts facts;
  facts.shape = look.shape;
  facts.now = now;
  facts.windows = windows;
  facts.own = look.own.get();
  if (!look.own && look.shared_missed) facts.own_looked = RequestFacts::Own::l1_and_l2;
  facts.needs_proof = look.needs_proof;
  facts.proof_state = look.proof;
  return facts;
}

RequestFacts::Proof proof_state_of(bool answered, bool widget_cached) {
  if (answered) return RequestFacts::Proof::holds;
  return widget_cached ? RequestFacts::Proof::none : RequestFacts::Proof::absent;
}

Outcome::Detail kind_of(RequestFacts::Shape shape, const cache::Entry& entry) {
  if (entry.proven) return Outcome::Detail::local;
  return shape == RequestFacts::Shape::derived ? Outcome::Detail::derived : Outcome::Detail::none;
}

Served answer(std::shared_ptr<const cache::Entry> entry, Outcome outcome, WallTime now) {
  Served served;
  served.entry = std::move(entry);
  served.outcome = outcome;
  served.now = now;
  return served;
}

}  // namespace

void GatewayService::add_coding(const std::string& key,
                                const std::shared_ptr<const cache::Entry>& entry,
                                std::string_view coding) {
  if (!entry->compress_on_demand || entry->variants.size() >= entry->variants.capacity()) return;
  for (const auto& [token, bytes] : entry->variants) {
    if (token == coding) return;
  }
  if (entry->body.size() < compress::kMinCompressBytes) return;
  if (!on_demand_.take(entry->body.size(), deps_.clock.steady_now())) return;
  auto encoded = compress::encode(coding, entry->body);
  if (!encoded) return;
  entry->variants.emplace_back(std::string(coding), std::move(*encoded));
  deps_.cache.store_local(key, entry);  // charged again, with the variant
}

bool GatewayService::early_draw(RequestFacts::Shape shape, const cache::Entry* own, WallTime now) {
  // XFetch, for a fresh copy; derived pages are never refreshed early themselves.
  return own != nullptr && now < own->fresh_until && shape != RequestFacts::Shape::derived &&
         cache::should_refresh_early(now, own->fresh_until, kRefreshCost, 1.0,
                                     deps_.random.uniform01());
}

std::optional<Served> GatewayService::serve_from_l1(const api::ApiRequest& request,
                                                    FirstLook& look) {
  const Settings& settings = *settings_;  // no reference count taken on the hit path
  look = first_look(request, settings);
  const WallTime now = deps_.clock.wall_now();
  if (!look.own || now >= look.own->fresh_until) return std::nullopt;
  RequestFacts facts = facts_for(look, now, settings.stale);
  facts.early_draw = early_draw(look.shape, look.own.get(), now);
  if (needs_quota_mode(facts)) facts.mode = quota_mode(settings);
  const Step step = next_step(facts);
  if (step.action == Step::Action::serve_own_refresh) {
    refresh_in_background(request, look.key, settings_, look.own->stored_at,
                          look.own->status == 200);
  } else if (step.action != Step::Action::serve_own) {
    return std::nullopt;
  }
  return answer(look.own, {Outcome::Source::cache, false, kind_of(look.shape, *look.own)}, now);
}

asio::awaitable<Served> GatewayService::serve(const api::ApiRequest& request,
                                              Admission* admission) {
  FirstLook look;
  if (std::optional<Served> hit = serve_from_l1(request, look)) co_return std::move(*hit);
  co_return co_await serve(request, std::move(look), admission);
}

asio::awaitable<Served> GatewayService::serve(const api::ApiRequest& request, FirstLook look,
                                              Admission* admission) {
  co_return co_await serve_key(request, std::move(look), settings_, admission);
}

asio::awaitable<Served> GatewayService::serve_key(const api::ApiRequest& request, FirstLook look,
                                                  SettingsPtr settings, Admission* admission) {
  using Action = Step::Action;
  using Failure = RequestFacts::Failure;
  const std::string key = look.key;
  // The facts are taken from `look` before its copy moves out of it.
  RequestFacts facts = facts_for(look, deps_.clock.wall_now(), settings->stale);
  std::shared_ptr<const cache::Entry> own = std::move(look.own);
  LocalProof proof;
  Served failed;  // what a failure answers when nothing rescues it
  // Results of the steps that wait, declared here and not in the loop's blocks: GCC 12
  // mishandles block-scoped locals that live across a co_await inside a loop.
  Found shared;
  Served page;
  Coalescer::Result fetched;
  Served proof_fetch;  // the widget data, fetched for the proof
  Served served;       // the answer

  facts.early_draw = early_draw(look.shape, own.get(), facts.now);

  // Each step either answers or adds a fact next_step() did not have, so the loop ends.
  for (;;) {
    if (needs_quota_mode(facts)) facts.mode = quota_mode(*settings);
    const Step step = next_step(facts);
    // An if-chain, not a switch: GCC 12 miscompiles co_await inside switch cases.
    const Action action = step.action;
    if (action == Action::serve_own || action == Action::serve_own_refresh) {
      if (step.action == Action::serve_own_refresh) {
        refresh_in_background(request, key, settings, own->stored_at, own->status == 200);
      }
      if (look.shape == RequestFacts::Shape::page && is_window_request(request) &&
          own->element_spans) {
        note_window(request, *own, own->element_spans->size());
      }
      served = answer(own,
                      {Outcome::Source::cache, false,
                       Outcome::detail_for(kind_of(look.shape, *own), step.stale)},
                      facts.now);
      served.proven = own->proven;
      served.upstream_error = failed.upstream_error;
      served.upstream_ms = failed.upstream_ms;
      co_return served;
    } else if (action == Action::answer_local || action == Action::answer_local_refresh) {
      if (step.action == Action::answer_local_refresh) {
        // A stale proof is served like the stale widget data it comes from, and refreshing
        // that data renews the proof: no upstream call for the page's window.
        api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
        refresh_in_background(widget_request, api::cache_key(widget_request), settings,
                              proof.widget->stored_at, proof.widget->status == 200);
      } else if (step.stale == StaleReason::none && facts.failure == Failure::none) {
        deps_.cache.store_local(key, proof.answer);  // a proof from fresh widget data
      }
      if (deps_.metrics) deps_.metrics->local_answer();
      served = answer(
          proof.answer,
          {Outcome::Source::cache, false, Outcome::detail_for(Outcome::Detail::local, step.stale)},
          facts.now);
      served.proven = true;
      served.upstream_error = failed.upstream_error;
      served.upstream_ms = failed.upstream_ms;  // the widget data's, when it was fetched for it
      co_return served;
    } else if (action == Action::look_up_shared) {
      shared = co_await deps_.cache.find_shared(key);
      facts.own_looked = RequestFacts::Own::l1_and_l2;
      if (shared.entry && (!own || shared.entry->stored_at > own->stored_at)) {
        own = std::move(shared.entry);
      }
      facts.shared_unavailable = shared.shared_unavailable;
      facts.own = own.get();
      facts.now = deps_.clock.wall_now();
      facts.early_draw = early_draw(look.shape, own.get(), facts.now);
    } else if (action == Action::look_up_siblings) {
      facts.siblings_looked = true;
      if (deps_.siblings != nullptr) {
        shared.entry = co_await deps_.siblings->find_copy(key, deps_.worker);
        facts.now = deps_.clock.wall_now();
        if (shared.entry && facts.now < shared.entry->stale_until) {
          own = std::move(shared.entry);
          deps_.cache.store_local(key, own);
          facts.own = own.get();
          facts.early_draw = early_draw(look.shape, own.get(), facts.now);
        }
      }
    } else if (action == Action::look_up_proof) {
      // When the widget data has to come from Redis, what the page needs next comes along in
      // the same command: the page's own key (a page answered as its own key, not in L1), or
      // its first window (a derived page; into L1, where derive() looks first).
      std::string also;
      if (look.shape == RequestFacts::Shape::page && !own) also = key;
      if (look.shape == RequestFacts::Shape::derived) {
        also = api::cache_key(cache::window_request(
            request, cache::windows_for(request.query.skip, request.query.limit).front()));
      }
      proof = co_await local_answer(request, std::move(also));
      facts.proof_state = proof_state_of(proof.answer != nullptr, proof.widget_cached);
      facts.proof = proof.answer.get();
      facts.proof_widget = proof.widget.get();
      facts.now = deps_.clock.wall_now();
      if (look.shape == RequestFacts::Shape::page && !own && proof.also.tier != Tier::none) {
        own = std::move(proof.also.entry);  // read from Redis along with the widget data
        facts.own = own.get();
        facts.own_looked = RequestFacts::Own::l1_and_l2;
        facts.early_draw = early_draw(look.shape, own.get(), facts.now);
      } else if (look.shape == RequestFacts::Shape::page && !own && proof.also_read) {
        facts.own_looked = RequestFacts::Own::l1_and_l2;  // not in Redis either (or Redis down)
        facts.shared_unavailable = proof.also.shared_unavailable;
      }
    } else if (action == Action::derive) {
      const bool first_window_missed =
          proof.also_read && !proof.also.entry && !proof.also.shared_unavailable;
      page = co_await derive(request, key, settings, admission, first_window_missed,
                             facts.proof_state);
      if (page.ok()) co_return page;
      failed = std::move(page);
      facts.failure = failed.failure;
      facts.now = deps_.clock.wall_now();
    } else if (action == Action::obtain_proof) {
      // The widget data, as its own key: coalesced, locked and paid for like any other. Redis
      // was just asked for it (with the proof lookup) and had nothing.
      facts.proof_obtained = true;
      api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
      FirstLook widget_look = first_look(widget_request, *settings);
      widget_look.shared_missed = true;
      proof_fetch = co_await serve_key(widget_request, std::move(widget_look), settings, admission);
      facts.now = deps_.clock.wall_now();
      if (proof_fetch.upstream_ms >= 0) failed.upstream_ms = proof_fetch.upstream_ms;
      if (!proof_fetch.ok()) {
        // Its failure is this request's answer: no second call for the key itself.
        failed = std::move(proof_fetch);
        facts.failure = failed.failure;
        continue;
      }
      proof = co_await local_answer(request);
      facts.proof_state = proof_state_of(proof.answer != nullptr, proof.widget_cached);
      facts.proof = proof.answer.get();
      facts.proof_widget = proof.widget.get();
      facts.now = deps_.clock.wall_now();
    } else if (action == Action::fetch) {
      fetched = Coalescer::Result{};
      std::chrono::seconds retry_after{0};
      if (auto refusal = deps_.fetcher.refusal(&fetched.outcome.retry_after)) {
        // The circuit is open (or upstream asked to wait): the fetch would end in this error
        // anyway, so neither the Redis lock nor its lookups are worth their round trips.
        fetched.outcome.error = refusal;
      } else {
        const bool copy_in_hand = (own && own->status == 200) ||
                                  (facts.proof_widget && facts.proof_widget->status == 200);
        const bool known_widget = co_await widget_known(request, *settings, copy_in_hand);
        // A request that joins a fetch already under way here costs upstream nothing: only the
        // one that starts it answers to the client's limits. (Asked after the last wait, so
        // that the flight a leader starts below is seen by every request after it.)
        const bool joining = coalescer_.in_flight(key);
        bool refused = false;
        if (!joining && admission != nullptr) {
          if (!admission->admit(retry_after)) {
            refused = true;
            failed.message = kClientLimit;
          } else if (!known_widget && !admission->admit_unknown(retry_after)) {
            refused = true;
            failed.message = kUnknownClientLimit;
            if (deps_.metrics) deps_.metrics->withheld(metrics::Withheld::unknown_client);
          }
        }
        if (refused) {
          // This client has used its share of upstream requests, or of lookups of ids nobody
          // knows yet.
          failed.error = api::ErrorCode::rate_limited;
          failed.retry_after = retry_after;
          facts.failure = Failure::refused;
          continue;
        }
        // Computed before the co_await: GCC 12 evaluates both arms of a conditional inside a
        // co_await expression.
        const WallTime known = own ? own->stored_at : WallTime{};
        fetched = co_await fetch_coalesced(request, key, settings, known, known_widget);
      }
      // No reference into `fetched` here: GCC 12 loses references declared after a co_await
      // inside a loop.
      const bool collapsed = fetched.collapsed;
      facts.now = deps_.clock.wall_now();
      if (!collapsed) failed.upstream_ms = fetched.outcome.upstream_ms;
      if (fetched.outcome.entry) {
        if (look.shape == RequestFacts::Shape::page && is_window_request(request) &&
            fetched.outcome.entry->element_spans) {
          note_window(request, *fetched.outcome.entry,
                      fetched.outcome.entry->element_spans->size());
        }
        served = answer(std::move(fetched.outcome.entry),
                        {collapsed ? Outcome::Source::collapsed : Outcome::Source::upstream,
                         fetched.outcome.stored, Outcome::Detail::none},
                        facts.now);
        served.upstream_ms = failed.upstream_ms;
        co_return served;
      }
      failed.upstream_error = fetched.outcome.error;
      failed.error = error_code_for(fetched.outcome.error);
      failed.message = message_for(fetched.outcome.error);
      failed.retry_after = fetched.outcome.retry_after;
      facts.failure = failure_of(fetched.outcome.error);
      facts.fallback = step.fallback;
    } else {  // Action::fail
      failed.entry.reset();
      failed.failure = facts.failure;
      failed.now = facts.now;
      co_return failed;
    }
  }
}

asio::awaitable<GatewayService::LocalProof> GatewayService::local_answer(
    const api::ApiRequest& request, std::string also) {
  api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
  std::string widget_key = api::cache_key(widget_request);
  Found widget;
  LocalProof proof;
  if (also.empty()) {
    widget = co_await deps_.cache.find(widget_key);
  } else {
    std::pair<Found, Found> both = co_await deps_.cache.find_pair(widget_key, also);
    widget = std::move(both.first);
    // Read along only when the widget data itself came from (or was missing in) Redis.
    proof.also_read = both.first.tier != Tier::l1;
    proof.also = std::move(both.second);
  }
  const WallTime now = deps_.clock.wall_now();
  std::optional<ListEnds::Seen> seen;
  if (deps_.list_ends != nullptr) seen = deps_.list_ends->facts(request, now);
  const cache::ListFacts list = seen ? seen->facts : cache::ListFacts{};
  if (!widget.entry) {
    // No widget data: the windows alone may still prove the page empty, for as long as they
    // are fresh.
    if (seen && cache::provably_empty(request.query, nullptr, list)) {
      auto basis = std::make_shared<cache::Entry>();
      basis->status = 200;
      basis->stored_at = seen->stored_at;
      basis->fresh_until = seen->fresh_until;
      basis->stale_until = seen->fresh_until;
      proof.answer = make_local_entry("[]", *basis, 200, seen->stored_at);
      proof.widget = std::move(basis);
    }
    co_return proof;
  }
  proof.widget_cached = true;
  const WallTime stored_at = now < widget.entry->fresh_until ? now : widget.entry->stored_at;
  if (widget.entry->status != 200) {
    // Upstream said this widget does not exist: so do its reviews (400, as upstream answers).
    proof.answer = make_local_entry({}, *widget.entry, 400, stored_at);
    proof.widget = std::move(widget.entry);
    co_return proof;
  }
  auto summary = upstream::inspect_widget_body(widget.entry->body);
  if (!summary || !cache::provably_empty(request.query, &*summary, list)) co_return proof;
  proof.answer = make_local_entry("[]", *widget.entry, 200, stored_at);
  proof.widget = std::move(widget.entry);
  co_return proof;
}

asio::awaitable<Served> GatewayService::derive(const api::ApiRequest& request,
                                               const std::string& key, const SettingsPtr& settings,
                                               Admission* admission, bool first_window_missed,
                                               RequestFacts::Proof page_proof) {
  // Each window is an ordinary cache key (limit=300, aligned skip): served in order.
  const std::vector<std::uint64_t> starts =
      cache::windows_for(request.query.skip, request.query.limit);
  std::vector<Served> parts;
  std::vector<std::pair<std::uint64_t, std::vector<std::string_view>>> windows;
  std::shared_ptr<const cache::Entry> page;
  bool reuse_page = false;
  bool local_first = false;  // the first window is proven empty: so is the page
  for (std::uint64_t start : starts) {
    api::ApiRequest window = cache::window_request(request, start);
    FirstLook look = first_look(window, *settings->windows);
    look.shape = RequestFacts::Shape::window;
    look.shared_missed = first_window_missed && start == starts.front();
    // What the page learnt of the widget data holds for a window that starts no later than
    // the page: no widget data, or none that proves the page (so nor the window) empty. A
    // later window looks for itself, unless there is no widget data to look at.
    if (page_proof == RequestFacts::Proof::absent) {
      look.proof = RequestFacts::Proof::absent;
    } else if (page_proof == RequestFacts::Proof::none && start <= request.query.skip) {
      look.proof = RequestFacts::Proof::none;
    }
    const std::string window_key = look.key;
    Served part = co_await serve_key(window, std::move(look), settings->windows, admission);
    if (!part.ok()) co_return part;
    if (part.entry->status != 200) co_return part;  // unknown widget
    if (part.proven) {
      // Proven empty (past the end of its list): so is the rest of the page.
      local_first = start == starts.front();
      windows.emplace_back(start, std::vector<std::string_view>{});
      parts.push_back(std::move(part));
      break;
    }
    // The page may already have been cut from this very window: on an earlier request while
    // the window is stale (the page is kept then too), or by a concurrent request that waited
    // for the same window fetch. Parsing the window and compressing the page again for every
    // such request is what saturated the CPU in outages and cold storms. A page carries its one
    // window's times, so equal times mean the same window.
    // Read again here, after the wait, not at the request's first look.
    std::shared_ptr<const cache::Entry> cached =
        starts.size() == 1 ? deps_.cache.l1().get(key) : nullptr;
    if (cached && cached->stored_at == part.entry->stored_at &&
        cached->fresh_until == part.entry->fresh_until &&
        cached->stale_until == part.entry->stale_until) {
      page = std::move(cached);
      reuse_page = true;
      parts.push_back(std::move(part));
      break;
    }
    bool parsed = false;
    std::optional<std::vector<std::string_view>> elements = window_elements(*part.entry, parsed);
    if (parsed) deps_.cache.store_local(window_key, part.entry);  // charged with its offsets
    if (!elements) {
      Served invalid;
      invalid.error = api::ErrorCode::upstream_error;
      invalid.failure = RequestFacts::Failure::upstream;
      invalid.now = part.now;
      co_return invalid;
    }
    note_window(window, *part.entry, elements->size());
    const bool last = elements->size() < cache::kWindowSize;
    windows.emplace_back(start, std::move(*elements));
    parts.push_back(std::move(part));
    if (last) break;  // the list ends inside this window
  }

  // The page's outcome is its windows': fetched if any was, stale if any was.
  Outcome outcome{Outcome::Source::cache, true, Outcome::Detail::derived};
  StaleReason stale = StaleReason::none;
  Served served;
  for (const Served& part : parts) {
    const Outcome::Source source = part.outcome.source;
    if (source == Outcome::Source::upstream) outcome.source = Outcome::Source::upstream;
    if (source == Outcome::Source::collapsed && outcome.source == Outcome::Source::cache) {
      outcome.source = Outcome::Source::collapsed;
    }
    served.upstream_ms = std::max(served.upstream_ms, part.upstream_ms);
    if (part.outcome.stale() != StaleReason::none && stale == StaleReason::none) {
      stale = part.outcome.stale();
      served.upstream_error = part.upstream_error;
    }
    outcome.stored = outcome.stored && (source == Outcome::Source::cache || part.outcome.stored);
  }
  outcome.detail =
      Outcome::detail_for(local_first ? Outcome::Detail::local : Outcome::Detail::derived, stale);

  if (!reuse_page) {
    auto body = cache::slice_page(request.query.skip, request.query.limit, windows);
    if (!body) {
      Served invalid;
      invalid.error = api::ErrorCode::upstream_error;
      invalid.failure = RequestFacts::Failure::upstream;
      invalid.now = deps_.clock.wall_now();
      co_return invalid;
    }
    auto derived = std::make_shared<cache::Entry>();
    derived->status = 200;
    derived->stored_at = parts.front().entry->stored_at;
    derived->fresh_until = parts.front().entry->fresh_until;
    derived->stale_until = parts.front().entry->stale_until;
    for (const Served& part : parts) {
      derived->stored_at = std::min(derived->stored_at, part.entry->stored_at);
      derived->fresh_until = std::min(derived->fresh_until, part.entry->fresh_until);
      derived->stale_until = std::min(derived->stale_until, part.entry->stale_until);
    }
    derived->etag = cache::strong_etag(*body);
    // Compressed when a client first accepts a coding for it (add_coding), not here: most
    // pages cut on a miss are asked for once, and many clients take identity.
    derived->compress_on_demand = true;
    derived->variants.reserve(2);
    derived->body = std::move(*body);
    // Kept even when cut from stale windows: it is served only while fresh, or again for
    // the very same window (above), never past its windows' stale_until.
    deps_.cache.store_local(key, derived);
    if (deps_.metrics) deps_.metrics->derived_page();
    page = std::move(derived);
  }
  served.entry = std::move(page);
  served.outcome = outcome;
  served.now = deps_.clock.wall_now();
  co_return served;
}

asio::awaitable<bool> GatewayService::widget_known(const api::ApiRequest& request,
                                                   const Settings& settings, bool copy_in_hand) {
  if (settings.all_known || copy_in_hand || deps_.known.known_locally(request.widget_id)) {
    co_return true;
  }
  co_return co_await deps_.known.known(deps_.redis, request.widget_id);
}

asio::awaitable<Coalescer::Result> GatewayService::fetch_coalesced(const api::ApiRequest& request,
                                                                   const std::string& key,
                                                                   const SettingsPtr& settings,
                                                                   WallTime known_stored_at,
                                                                   bool widget_known) {
  // Named, not a temporary in the co_await expression: GCC 12 destroys those twice.
  Coalescer::Fetch fetch_once = [this, request, key, settings, known_stored_at, widget_known]() {
    return fetch_shared(request, key, settings, known_stored_at, widget_known, false);
  };
  auto result = co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
  if (result.collapsed && deps_.metrics) deps_.metrics->coalesced_waiter();
  co_return result;
}

asio::awaitable<FetchOutcome> GatewayService::fetch_shared(api::ApiRequest request, std::string key,
                                                           SettingsPtr settings,
                                                           WallTime known_stored_at,
                                                           bool widget_known, bool background) {
  // A copy stored after this request looked (by a flight that ended just before this one
  // began, here or on another instance) makes the trip unnecessary.
  auto newer = [&](const std::shared_ptr<const cache::Entry>& entry) {
    return entry && entry->stored_at > known_stored_at &&
           deps_.clock.wall_now() < entry->fresh_until;
  };
  if (auto mine = deps_.cache.l1().get(key); newer(mine)) {
    FetchOutcome outcome;
    outcome.entry = std::move(mine);
    outcome.stored = true;
    co_return outcome;
  }

  const std::string lock_key = lock_key_for(key);
  const std::optional<FetchLock::Guard> guard = co_await guard_for(key);
  const FetchLock::Guard* counted = guard ? &*guard : nullptr;
  FetchLock::Held held;
  // At most a few rounds of waiting for other instances; then fetch regardless, so a lost
  // lock holder can delay this key but never starve it.
  for (int round = 0; round < 3; ++round) {
    held = co_await deps_.lock.try_acquire(lock_key, settings->lock_ttl, counted);
    if (held.acquired || !held.shared) break;
    // Someone is fetching: wait until they are done. "done" already: their entry is stored
    // (this request's lookup came just before it).
    if (!held.done) co_await deps_.lock.wait_released(lock_key, settings->lock_ttl);
    Found theirs = co_await deps_.cache.find_shared(key);
    if (newer(theirs.entry)) {
      FetchOutcome outcome;
      outcome.entry = std::move(theirs.entry);
      outcome.stored = true;
      co_return outcome;
    }
    if (held.done) {
      // "done" with nothing newer in Redis: a fetch this request already knows the result of
      // (a copy that has gone stale since, with short TTLs), or whose entry was purged since.
      held = co_await deps_.lock.take_over_done(lock_key, settings->lock_ttl, counted);
      if (held.acquired || !held.shared) break;
      continue;
    }
    if (background) co_return FetchOutcome{};  // the other instance's refresh failed: stay stale
  }

  // The guard: a widget that has spent its bound (plus the slack) in this period gets one call
  // (for all its keys) per widget_pace. The bound is worked out only when the count could exceed
  // it.
  if (guard && held.shared && held.spent >= 1 + settings->widget_slack) {
    const std::uint64_t bound = co_await widget_bound(request);
    if (widget_paced(held.spent, bound, settings->widget_slack)) {
      const FetchLock::Pace pace = co_await deps_.lock.take_pace(*guard, settings->widget_pace);
      if (pace.first) {
        log::warn("widget_paced", {{"widget", request.widget_id},
                                   {"spent", static_cast<long long>(held.spent)},
                                   {"bound", static_cast<long long>(bound)},
                                   {"slack", static_cast<long long>(settings->widget_slack)}});
      }
      if (pace.shared && !pace.taken) {
        if (deps_.metrics) deps_.metrics->withheld(metrics::Withheld::widget_paced);
        if (held.acquired) co_await deps_.lock.release(lock_key, held.token);
        FetchOutcome paced;
        paced.error = make_error_code(errc::widget_paced);
        paced.retry_after =
            std::max(std::chrono::seconds(1), std::chrono::ceil<std::chrono::seconds>(pace.left));
        co_return paced;
      }
    }
  }

  // No read under the lock: a fetch stored since this request's lookup would have left "done"
  // in the lock (see FetchLock), and this request would not hold it.
  FetchOutcome outcome = co_await deps_.fetcher.fetch(request, settings->fetch, widget_known);
  if (outcome.entry && (outcome.entry->status == 200 || settings->fetch.cache_negative)) {
    outcome.stored = co_await deps_.cache.store(key, outcome.entry);
  }
  // Only stored successes count against the guard: a failure never locks a widget out, and
  // unknown ids have a budget of their own.
  const bool count = guard && outcome.stored && outcome.entry->status == 200;
  if (held.acquired) {
    if (outcome.stored) {
      co_await deps_.lock.mark_done(lock_key, count ? counted : nullptr);
    } else {
      co_await deps_.lock.release(lock_key, held.token);
    }
  } else if (count && held.shared) {
    co_await deps_.lock.count_stored(lock_key, *guard);
  }
  co_return outcome;
}

asio::awaitable<std::optional<FetchLock::Guard>> GatewayService::guard_for(const std::string& key) {
  const auto parts = cache::split_key(key);
  if (!parts) co_return std::nullopt;
  const WallTime now = deps_.clock.wall_now();
  const cache::TtlPolicy::Period period = settings_->fetch.ttl.period_of(now);
  const long long end_s =
      std::chrono::duration_cast<std::chrono::seconds>(period.end.time_since_epoch()).count();
  const std::string head = cache::logical_widget_prefix(parts->escaped_id);
  auto [counter_ec, counter] =
      co_await deps_.cache.shared().physical(head + "spent:" + std::to_string(end_s));
  if (counter_ec) co_return std::nullopt;
  auto [pace_ec, pace] =
      co_await deps_.cache.shared().physical(head + "pace:" + std::to_string(end_s));
  if (pace_ec) co_return std::nullopt;
  FetchLock::Guard guard;
  guard.counter = std::move(counter);
  guard.pace = std::move(pace);
  // Kept a minute past the period, so that a clock a little behind still finds it.
  guard.expires_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         (period.end + std::chrono::minutes(1)).time_since_epoch())
                         .count();
  co_return guard;
}

asio::awaitable<std::uint64_t> GatewayService::widget_bound(const api::ApiRequest& request) {
  api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
  Found widget = co_await deps_.cache.find(api::cache_key(widget_request));
  if (widget.entry && widget.entry->status == 200) {
    if (auto summary = upstream::inspect_widget_body(widget.entry->body)) {
      co_return cache::upstream_bound(*summary);
    }
  }
  co_return 2;  // its widget data and its first window
}

void GatewayService::note_window(const api::ApiRequest& window, const cache::Entry& entry,
                                 std::size_t elements) {
  if (deps_.list_ends == nullptr || entry.status != 200) return;
  deps_.list_ends->record(window, window.query.skip, elements, entry.stored_at, entry.fresh_until,
                          deps_.clock.wall_now());
}

void GatewayService::refresh_in_background(const api::ApiRequest& request, const std::string& key,
                                           const SettingsPtr& settings, WallTime known_stored_at,
                                           bool widget_known) {
  // While the circuit is open (or upstream's 429 back-off runs) a refresh could only fail,
  // after a Redis lock and a Redis read of the whole entry: on every request for a stale key
  // during an outage. The stale copy is served without it; the first request after the
  // pause refreshes (and becomes the half-open probe).
  if (deps_.fetcher.refusal()) return;
  if (refreshes_in_flight_.fetch_add(1) >= kMaxBackgroundRefreshes) {
    refreshes_in_flight_.fetch_sub(1);
    return;
  }
  auto refresh = [this, request, key, settings, known_stored_at,
                  widget_known]() -> asio::awaitable<void> {
    Coalescer::Fetch fetch_once = [this, request, key, settings, known_stored_at, widget_known]() {
      return fetch_shared(request, key, settings, known_stored_at, widget_known, true);
    };
    co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
    refreshes_in_flight_.fetch_sub(1);
  };
  asio::co_spawn(background_, refresh, asio::detached);
}

}  // namespace wg::serving
