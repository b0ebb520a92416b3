#include "gateway_service.hpp"

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"

namespace wg::serving {
namespace asio = boost::asio;

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

RequestFacts::Proof proof_state_of(const LocalProof& proof) {
  if (proof.answer) return RequestFacts::Proof::holds;
  return proof.widget_cached ? RequestFacts::Proof::none : RequestFacts::Proof::absent;
}

Outcome::Detail kind_of(RequestFacts::Shape shape, const cache::Entry& entry) {
  if (entry.hold) return Outcome::Detail::unconfirmed;
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

api::ApiRequest widget_request_of(const api::ApiRequest& request) {
  return {api::Endpoint::widget, request.widget_id, {}};
}

}  // namespace

// One key's request in flight: the facts the policy decides on, and the entries they point
// at. Lives in serve_key's frame; the steps work on it.
struct GatewayService::KeyServing {
  const api::ApiRequest& request;
  FirstLook look;  // the key and its shape (`own` moves out into `own` below)
  SettingsPtr settings;
  Admission* admission = nullptr;
  const tracing::SpanContext* trace = nullptr;  // null: not traced
  // Each with an initializer: serve_key gives only the five above, which clang's
  // -Wmissing-field-initializers accepts only so.
  std::string widget_key{};                    // the widget data's key (reviews), computed once
  std::vector<PageDeriver::Window> windows{};  // a derived page's, keys computed once
  RequestFacts facts{};
  std::shared_ptr<const cache::Entry> own{};
  LocalProof proof{};
  Served failed{};  // what a failure answers when nothing rescues it
};

GatewayService::GatewayService(asio::any_io_executor background, ServiceDependencies deps,
                               const config::Config& config)
    : background_(background),
      deps_(deps),
      proofs_(deps.cache, deps.list_ends, deps.clock),
      shared_fetch_(std::move(background),
                    {deps.cache, deps.fetcher, deps.lock, deps.clock, deps.metrics, deps.tracer}),
      pages_(deps.cache, deps.list_ends, deps.clock, deps.metrics),
      forms_(deps.cache, deps.clock) {
  update(config);
}

void GatewayService::update(const config::Config& config) {
  settings_ = settings_from(config);
  demand_.set_enabled(config.cache.prefetch);
  deps_.cache.hold_to(settings_->shared.fetch.ttl, deps_.clock.wall_now());
}

FirstLook GatewayService::first_look(const api::ApiRequest& request,
                                     const ServiceSettings& settings, std::string key) {
  FirstLook look;
  look.key = std::move(key);
  fill_first_look(request, settings, look, !look.key.empty());
  return look;
}

void GatewayService::fill_first_look(const api::ApiRequest& request,
                                     const ServiceSettings& settings, FirstLook& look,
                                     bool key_known) {
  using Shape = RequestFacts::Shape;
  if (!key_known) api::cache_key_into(request, look.key);
  look.shared_missed = false;
  look.proof = RequestFacts::Proof::not_looked;
  if (request.endpoint == api::Endpoint::widget) {
    look.shape = Shape::widget;
  } else {
    look.shape =
        settings.derive_pages && !cache::is_window(request.query) ? Shape::derived : Shape::page;
  }
  look.own = deps_.cache.find_local(look.key, &look.annex);
  look.needs_proof = request.endpoint == api::Endpoint::reviews &&
                     (request.query.skip >= cache::kWindowSize || request.query.type.has_value());
}

bool GatewayService::early_due(RequestFacts::Shape shape, const cache::Entry* own, WallTime now) {
  // Derived pages are never refreshed early themselves (their windows are).
  return own != nullptr && shape != RequestFacts::Shape::derived && early_refresh_due(*own, now);
}

void GatewayService::keep_beside(const std::string& key, const cache::Entry* entry,
                                 std::unique_ptr<const cache::L1Annex> annex) {
  deps_.cache.l1().attach(key, entry, std::move(annex));
}

std::optional<Served> GatewayService::serve_from_l1(const api::ApiRequest& request,
                                                    FirstLook& look) {
  const ServiceSettings& settings = *settings_;  // no reference count taken on the hit path
  fill_first_look(request, settings, look, false);
  const WallTime now = deps_.clock.wall_now();
  if (!look.own || now >= look.own->fresh_until) return std::nullopt;
  RequestFacts facts = facts_for(look, now, settings.stale);
  facts.early_due = early_due(look.shape, look.own.get(), now);
  if (needs_quota_mode(facts)) facts.mode = deps_.quota.snapshot().mode;
  const Step step = next_step(facts);
  if (step.action == Step::Action::serve_own_refresh) {
    look.annex = nullptr;  // the refresh may change L1 before the answer is built
    shared_fetch_.refresh_in_background(request, look.key, shared_part(settings_), look.own,
                                        look.own->status == 200, metrics::RefreshKind::early);
  } else if (step.action != Step::Action::serve_own) {
    return std::nullopt;
  }
  return answer(look.own, {Outcome::Source::cache, false, kind_of(look.shape, *look.own)}, now);
}

asio::awaitable<GatewayService::Prefetched> GatewayService::prefetch(const api::ApiRequest& request,
                                                                     WallTime boundary,
                                                                     bool again) {
  using Result = metrics::PrefetchResult;
  const SettingsPtr settings = settings_;
  const std::string key = api::cache_key(request);
  // Refused before anything is read: upstream's hold, an open circuit, the month spent.
  if (deps_.fetcher.refusal()) co_return Prefetched{Result::refused, false, true};
  if (request.endpoint == api::Endpoint::reviews) {
    const std::string widget_key = api::cache_key(widget_request_of(request));
    LocalProof proof = co_await proofs_.look(request, widget_key);
    if (proof.answer) co_return Prefetched{Result::empty, false, false};
    if (proof.widget && proof.widget->status != 200)
      co_return Prefetched{Result::negative, false, false};
  }
  Found found = co_await deps_.cache.find(key);
  if (found.entry && found.entry->status != 200)
    co_return Prefetched{Result::negative, false, false};
  if (found.entry && found.entry->stored_at >= boundary && !again)
    co_return Prefetched{Result::stored, false, false};
  // Only widgets upstream has answered 200 for: the prefetch never spends the unknown-id budget.
  bool known =
      settings->all_known || found.entry != nullptr || deps_.known.known_locally(request.widget_id);
  if (!known) known = co_await deps_.known.known(deps_.redis, request.widget_id);
  if (!known) co_return Prefetched{Result::negative, false, false};

  Coalescer::Result fetched =
      co_await shared_fetch_.fetch(request, key, shared_part(settings), found.entry, true);
  const FetchOutcome& outcome = fetched.outcome;
  const bool asked = outcome.upstream_ms >= 0 && !fetched.collapsed;
  if (!outcome.entry) co_return Prefetched{asked ? Result::failed : Result::refused, asked, false};
  if (!asked || outcome.theirs) co_return Prefetched{Result::stored, false, false};
  co_return Prefetched{outcome.unchanged ? Result::unchanged : Result::fetched, true, false};
}

asio::awaitable<Served> GatewayService::serve(const api::ApiRequest& request,
                                              Admission* admission) {
  FirstLook look;
  if (std::optional<Served> hit = serve_from_l1(request, look)) co_return std::move(*hit);
  co_return co_await serve(request, std::move(look), admission);
}

asio::awaitable<Served> GatewayService::serve(const api::ApiRequest& request, FirstLook look,
                                              Admission* admission,
                                              const tracing::SpanContext* trace) {
  co_return co_await serve_key(request, std::move(look), settings_, admission, trace);
}

asio::awaitable<Served> GatewayService::serve_key(const api::ApiRequest& request, FirstLook look,
                                                  SettingsPtr settings, Admission* admission,
                                                  const tracing::SpanContext* trace) {
  using Action = Step::Action;
  KeyServing s{request, std::move(look), std::move(settings), admission, trace};
  s.facts = facts_for(s.look, deps_.clock.wall_now(), s.settings->stale);
  s.facts.client_limits = admission != nullptr;
  s.own = std::move(s.look.own);
  s.facts.early_due = early_due(s.look.shape, s.own.get(), s.facts.now);
  if (request.endpoint == api::Endpoint::reviews) {
    s.widget_key = api::cache_key(widget_request_of(request));
  }
  if (s.look.shape == RequestFacts::Shape::derived) s.windows = PageDeriver::windows_of(request);

  // Declared here and not in the loop's blocks: GCC 12 mishandles block-scoped locals that
  // live across a co_await inside a loop.
  Step step;
  std::optional<Served> answered;
  // Each step either answers or adds a fact next_step() did not have, so the loop ends.
  for (;;) {
    if (needs_quota_mode(s.facts)) s.facts.mode = deps_.quota.snapshot().mode;
    step = next_step(s.facts);
    // An if-chain, not a switch: GCC 12 miscompiles co_await inside switch cases.
    const Action action = step.action;
    if (action == Action::serve_own || action == Action::serve_own_refresh) {
      co_return serve_own(s, step);
    } else if (action == Action::answer_local || action == Action::answer_local_refresh) {
      co_return answer_local(s, step);
    } else if (action == Action::fail) {
      co_return fail(s);
    } else if (action == Action::look_up_shared) {
      co_await look_up_shared(s);
    } else if (action == Action::look_up_siblings) {
      co_await look_up_siblings(s);
    } else if (action == Action::look_up_proof) {
      co_await look_up_proof(s);
    } else if (action == Action::look_up_proof_siblings) {
      co_await look_up_proof_siblings(s);
    } else if (action == Action::obtain_proof) {
      co_await obtain_proof(s);
    } else if (action == Action::check_refusal) {
      check_refusal(s, step);
    } else if (action == Action::look_up_known) {
      co_await look_up_known(s);
    } else if (action == Action::admit) {
      admit(s, step);
    } else if (action == Action::walk_list) {
      answered = co_await walk_list(s);
      if (answered) co_return std::move(*answered);
    } else if (action == Action::derive) {
      answered = co_await derive(s);
      if (answered) co_return std::move(*answered);
    } else {  // Action::fetch
      answered = co_await fetch(s, step);
      if (answered) co_return std::move(*answered);
    }
  }
}

Served GatewayService::serve_own(KeyServing& s, const Step& step) {
  if (step.action == Step::Action::serve_own_refresh) {
    const auto kind = s.facts.now < s.own->fresh_until ? metrics::RefreshKind::early
                                                       : metrics::RefreshKind::stale;
    shared_fetch_.refresh_in_background(s.request, s.look.key, shared_part(s.settings), s.own,
                                        s.own->status == 200, kind);
  }
  if (s.look.shape == RequestFacts::Shape::page && cache::is_window(s.request.query) &&
      s.own->element_spans && deps_.list_ends != nullptr) {
    deps_.list_ends->record_window(s.request, *s.own, s.own->element_spans->size(), s.facts.now);
  }
  Served served = answer(s.own,
                         {Outcome::Source::cache, false,
                          Outcome::detail_for(kind_of(s.look.shape, *s.own), step.stale)},
                         s.facts.now);
  served.proven = s.own->proven;
  served.upstream_error = s.failed.upstream_error;
  served.upstream_ms = s.failed.upstream_ms;
  return served;
}

Served GatewayService::answer_local(KeyServing& s, const Step& step) {
  if (step.action == Step::Action::answer_local_refresh) {
    // A stale proof is served like the stale widget data it comes from, and refreshing that
    // data renews the proof: no upstream call for the page's window.
    shared_fetch_.refresh_in_background(widget_request_of(s.request), s.widget_key,
                                        shared_part(s.settings), s.proof.widget,
                                        s.proof.widget->status == 200, metrics::RefreshKind::stale);
  } else if (step.stale == StaleReason::none && s.facts.failure == RequestFacts::Failure::none) {
    deps_.cache.store_local(s.look.key, s.proof.answer);  // a proof from fresh data
  }
  if (deps_.metrics) deps_.metrics->local_answer();
  Served served = answer(s.proof.answer,
                         {Outcome::Source::cache, false,
                          Outcome::detail_for(kind_of(s.look.shape, *s.proof.answer), step.stale)},
                         s.facts.now);
  served.proven = true;
  served.upstream_error = s.failed.upstream_error;
  served.upstream_ms = s.failed.upstream_ms;  // the widget data's, when it was fetched for it
  return served;
}

Served GatewayService::fail(KeyServing& s) {
  Served failed = std::move(s.failed);
  failed.entry.reset();
  failed.failure = s.facts.failure;
  failed.now = s.facts.now;
  // The request's own answer only: a window's failure goes up to the page it was cut for.
  if (s.look.shape != RequestFacts::Shape::window &&
      answers_empty_on_error(s.request.endpoint, failed.error,
                             s.settings->empty_reviews_on_error)) {
    auto empty = std::make_shared<cache::Entry>();
    empty->status = 200;
    empty->stored_at = empty->fresh_until = empty->stale_until = s.facts.now;
    empty->body = "[]";
    empty->etag = cache::strong_etag(empty->body);
    failed.entry = std::move(empty);
    failed.outcome = {Outcome::Source::cache, false, Outcome::Detail::empty_on_error};
  }
  return failed;
}

void GatewayService::take_own(KeyServing& s, std::shared_ptr<const cache::Entry> entry) {
  s.own = std::move(entry);
  s.facts.own = s.own.get();
  s.facts.early_due = early_due(s.look.shape, s.own.get(), s.facts.now);
}

asio::awaitable<void> GatewayService::look_up_shared(KeyServing& s) {
  tracing::Span span;
  if (s.trace != nullptr) {
    span = tracing::Span::child(*s.trace, "redis lookup", tracing::SpanKind::client);
  }
  Found shared = co_await deps_.cache.find_shared(s.look.key);
  span.set("wg.found", shared.entry != nullptr);
  if (shared.shared_unavailable) span.fail();
  span.end();
  s.facts.now = deps_.clock.wall_now();
  s.facts.own_looked = RequestFacts::Own::l1_and_l2;
  s.facts.shared_unavailable = shared.shared_unavailable;
  if (shared.entry && (!s.own || shared.entry->stored_at > s.own->stored_at)) {
    take_own(s, std::move(shared.entry));
  } else {
    s.facts.early_due = early_due(s.look.shape, s.own.get(), s.facts.now);
  }
}

asio::awaitable<void> GatewayService::look_up_siblings(KeyServing& s) {
  s.facts.siblings_looked = true;
  if (deps_.siblings == nullptr) co_return;
  std::shared_ptr<const cache::Entry> copy =
      co_await deps_.siblings->find_copy(s.look.key, deps_.worker);
  s.facts.now = deps_.clock.wall_now();
  if (copy && s.facts.now < copy->stale_until) {
    copy = deps_.cache.store_local(s.look.key, std::move(copy));  // held to this worker's policy
    if (s.facts.now < copy->stale_until) take_own(s, std::move(copy));
  }
}

asio::awaitable<void> GatewayService::look_up_proof(KeyServing& s) {
  // When the widget data has to come from Redis, what the request needs next comes along in
  // the same command: the page's own key (a page answered as its own key, not in L1), or its
  // first window (a derived page; into L1, where its window looks first).
  using Shape = RequestFacts::Shape;
  const bool page_without_copy = s.look.shape == Shape::page && !s.own;
  std::string also;
  if (page_without_copy) also = s.look.key;
  if (s.look.shape == Shape::derived) also = s.windows.front().key;
  take_proof(s, co_await proofs_.look(s.request, s.widget_key, also));
  if (page_without_copy && s.proof.also.tier != Tier::none) {
    s.facts.own_looked = RequestFacts::Own::l1_and_l2;
    take_own(s, std::move(s.proof.also.entry));  // read from Redis with the widget data
  } else if (page_without_copy && s.proof.also_read) {
    s.facts.own_looked = RequestFacts::Own::l1_and_l2;  // not in Redis either (or Redis down)
    s.facts.shared_unavailable = s.proof.also.shared_unavailable;
  }
}

asio::awaitable<void> GatewayService::obtain_proof(KeyServing& s) {
  // The widget data, as its own key: coalesced, locked and paid for like any other. Redis was
  // just asked for it (with the proof lookup) and had nothing.
  s.facts.proof_obtained = true;
  const api::ApiRequest widget_request = widget_request_of(s.request);
  FirstLook widget_look = first_look(widget_request, *s.settings, s.widget_key);
  widget_look.shared_missed = true;
  Served widget =
      co_await serve_key(widget_request, std::move(widget_look), s.settings, s.admission, s.trace);
  s.facts.now = deps_.clock.wall_now();
  if (widget.upstream_ms >= 0) s.failed.upstream_ms = widget.upstream_ms;
  if (!widget.ok()) {
    // Its failure is this request's answer: no second call for the key itself.
    s.failed = std::move(widget);
    s.facts.failure = s.failed.failure;
    co_return;
  }
  take_proof(s, co_await proofs_.look(s.request, s.widget_key));
}

asio::awaitable<void> GatewayService::look_up_proof_siblings(KeyServing& s) {
  // As look_up_siblings, for the widget data: another worker's copy joins this worker's L1,
  // and the proof is looked at again (found in L1 this time, or still absent).
  s.facts.proof_siblings_looked = true;
  if (deps_.siblings == nullptr) co_return;
  std::shared_ptr<const cache::Entry> copy =
      co_await deps_.siblings->find_copy(s.widget_key, deps_.worker);
  s.facts.now = deps_.clock.wall_now();
  if (!copy || s.facts.now >= copy->stale_until) co_return;
  deps_.cache.store_local(s.widget_key, std::move(copy));
  LocalProof proof = co_await proofs_.look(s.request, s.widget_key);
  proof.also = std::move(s.proof.also);  // what the first look read along stays known
  proof.also_read = s.proof.also_read;
  take_proof(s, std::move(proof));
}

void GatewayService::take_proof(KeyServing& s, LocalProof proof) {
  s.proof = std::move(proof);
  s.facts.now = deps_.clock.wall_now();
  s.facts.proof_state = proof_state_of(s.proof);
  s.facts.proof_unavailable = s.proof.widget_unavailable;
  s.facts.proof = s.proof.answer.get();
  s.facts.proof_widget = s.proof.widget.get();
  s.facts.walk_due = s.proof.walk_from.has_value() && s.settings->derive_pages;
}

void GatewayService::fold_failure(KeyServing& s, const FailureAnswer& answer, const Step& step,
                                  std::chrono::seconds retry_after,
                                  std::error_code upstream_error) {
  if (upstream_error) s.failed.upstream_error = upstream_error;
  s.failed.error = answer.code;
  s.failed.message = answer.message;
  s.failed.refusal = answer.reason;
  s.failed.retry_after = retry_after;
  s.facts.failure = answer.failure;
  s.facts.fallback = step.fallback;
}

void GatewayService::check_refusal(KeyServing& s, const Step& step) {
  // The circuit is open, upstream asked to wait or the quota is spent: the fetch would end in
  // this error anyway, so neither the Redis lock nor its lookups are worth their round trips.
  s.facts.refusal_checked = true;
  std::chrono::seconds retry_after{0};
  if (const std::error_code refusal = deps_.fetcher.refusal(&retry_after)) {
    fold_failure(s, failure_answer(refusal), step, retry_after, refusal);
  }
}

asio::awaitable<void> GatewayService::look_up_known(KeyServing& s) {
  // Upstream has answered 200 for the widget: allowlisted, a 200 copy in hand (the key's own,
  // or the widget data behind the proof), known to this process or to Redis.
  const bool copy_in_hand = (s.own && s.own->status == 200) ||
                            (s.facts.proof_widget && s.facts.proof_widget->status == 200);
  bool known =
      s.settings->all_known || copy_in_hand || deps_.known.known_locally(s.request.widget_id);
  if (!known) known = co_await deps_.known.known(deps_.redis, s.request.widget_id);
  s.facts.widget_known = known;
  s.facts.known_looked = true;
  // After the last wait before the fetch, so that a flight started meanwhile is joined.
  s.facts.joining = shared_fetch_.in_flight(s.look.key);
}

void GatewayService::admit(KeyServing& s, const Step& step) {
  std::chrono::seconds retry_after{0};
  if (!s.admission->admit(retry_after)) {
    fold_failure(s, failure_answer(ClientLimit::upstream_requests), step, retry_after);
    return;
  }
  if (!s.facts.widget_known && !s.admission->admit_unknown(retry_after)) {
    if (deps_.metrics) deps_.metrics->withheld(metrics::Withheld::unknown_client);
    fold_failure(s, failure_answer(ClientLimit::unknown_ids), step, retry_after);
    return;
  }
  s.facts.admitted = true;
}

asio::awaitable<std::optional<Served>> GatewayService::walk_list(KeyServing& s) {
  s.facts.walked = true;
  // Each window is served as its own key, looking for its own proof (the windows below the
  // page are what the walk learns from).
  const PageDeriver::ServeWindow serve_window =
      [this, &s](const PageDeriver::Window& window) -> asio::awaitable<Served> {
    FirstLook look = first_look(window.request, *s.settings, window.key);
    look.shape = RequestFacts::Shape::window;
    co_return co_await serve_key(window.request, std::move(look), s.settings, s.admission, s.trace);
  };
  const std::uint64_t skip = s.request.query.skip;
  std::optional<Served> stopped = co_await pages_.walk(
      s.request, *s.proof.walk_from, skip - skip % cache::kWindowSize, serve_window);
  s.facts.now = deps_.clock.wall_now();
  if (stopped && stopped->ok()) co_return stopped;  // the widget is unknown: its 400
  if (stopped) {
    s.failed = std::move(*stopped);
    s.facts.failure = s.failed.failure;
    co_return std::nullopt;
  }
  // What the windows showed may prove the page now: the widget data is consulted again.
  s.facts.proof_state = RequestFacts::Proof::not_looked;
  co_return std::nullopt;
}

asio::awaitable<std::optional<Served>> GatewayService::derive(KeyServing& s) {
  const bool first_window_missed =
      s.proof.also_read && !s.proof.also.entry && !s.proof.also.shared_unavailable;
  const RequestFacts::Proof page_proof = s.facts.proof_state;
  const std::uint64_t first_start = s.windows.front().start;
  // Named, not a temporary: PageDeriver calls it across its waits.
  const PageDeriver::ServeWindow serve_window =
      [this, &s, first_window_missed, page_proof,
       first_start](const PageDeriver::Window& window) -> asio::awaitable<Served> {
    FirstLook look = first_look(window.request, *s.settings, window.key);
    look.shape = RequestFacts::Shape::window;
    look.shared_missed = first_window_missed && window.start == first_start;
    // What the page learnt of the widget data holds for a window that starts no later than
    // the page: no widget data, or none that proves the page (so nor the window) empty. A
    // later window looks for itself, unless there is no widget data to look at.
    if (page_proof == RequestFacts::Proof::absent) {
      look.proof = RequestFacts::Proof::absent;
    } else if (page_proof == RequestFacts::Proof::none && window.start <= s.request.query.skip) {
      look.proof = RequestFacts::Proof::none;
    }
    co_return co_await serve_key(window.request, std::move(look), s.settings, s.admission, s.trace);
  };
  Served page = co_await pages_.derive(s.request, s.look.key, s.windows, serve_window);
  if (page.ok()) co_return page;
  s.failed = std::move(page);
  s.facts.failure = s.failed.failure;
  s.facts.now = deps_.clock.wall_now();
  co_return std::nullopt;
}

asio::awaitable<std::optional<Served>> GatewayService::fetch(KeyServing& s, const Step& step) {
  Coalescer::Result fetched = co_await shared_fetch_.fetch(
      s.request, s.look.key, shared_part(s.settings), s.own, s.facts.widget_known, s.trace);
  s.facts.now = deps_.clock.wall_now();
  s.facts.upstream_reached = !fetched.collapsed && fetched.outcome.upstream_ms >= 0;
  if (!fetched.collapsed) s.failed.upstream_ms = fetched.outcome.upstream_ms;
  if (fetched.outcome.entry) {
    const std::shared_ptr<const cache::Entry>& entry = fetched.outcome.entry;
    if (s.look.shape == RequestFacts::Shape::page && cache::is_window(s.request.query) &&
        entry->element_spans && deps_.list_ends != nullptr) {
      deps_.list_ends->record_window(s.request, *entry, entry->element_spans->size(), s.facts.now);
    }
    // Joined: this worker's flight, or another worker's or instance's that stored it while
    // this request waited for the lock.
    const bool joined = fetched.collapsed || fetched.outcome.theirs;
    Served served = answer(entry,
                           {joined ? Outcome::Source::collapsed : Outcome::Source::upstream,
                            fetched.outcome.stored, kind_of(s.look.shape, *entry)},
                           s.facts.now);
    served.upstream_ms = s.failed.upstream_ms;
    co_return served;
  }
  fold_failure(s, failure_answer(fetched.outcome.error), step, fetched.outcome.retry_after,
               fetched.outcome.error);
  if (refunds_unknown_token(s.facts)) s.admission->refund_unknown();
  co_return std::nullopt;
}

}  // namespace wg::serving
