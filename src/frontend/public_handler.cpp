#include "public_handler.hpp"

#include <iterator>

#include "error_response.hpp"
#include "outcome_metrics.hpp"
#include "widget_gateway/api/route.hpp"
#include "widget_gateway/api/validate.hpp"
#include "widget_gateway/client_policy/coding.hpp"

namespace wg::frontend {
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using bhttp::verb;

namespace {

using api::kApiMethods;
constexpr std::string_view kHealthMethods = "GET, HEAD";

bool is_get_or_head(verb method) {
  return method == verb::get || method == verb::head;
}

// The server span's name: the route's template (OpenTelemetry's `http.route`); the method, which
// may be GET, HEAD or OPTIONS, is an attribute.
std::string_view span_name(api::Route route) {
  switch (route) {
    case api::Route::widget:
      return "/api/v1/widgets/widget/{id}/remote";
    case api::Route::reviews:
      return "/api/v1/widgets/widget/{id}/reviews/remote";
    case api::Route::healthz:
      return "/healthz";
    case api::Route::readyz:
      return "/readyz";
    case api::Route::not_found:
      break;
  }
  return "other";
}

// The request's trace, continued from its traceparent (and tracestate) or started here. A
// caller's forced sample counts against a budget unless it is one of `proxies` (asked only
// when there is a traceparent: most requests have none).
tracing::RequestTrace begin_trace(tracing::Tracer* tracer, const http::Request& request,
                                  const client_policy::TrustedProxies& proxies, api::Route route) {
  if (tracer == nullptr) return {};
  const http::HeaderLine* found = request.headers.find("traceparent");
  if (found == nullptr) return tracer->begin({}, {}, false, span_name(route));
  const bool trusted = !proxies.empty() && proxies.contains(request.peer);
  const std::string_view traceparent = found->value;
  const bool repeated = request.headers.count("traceparent") > 1;
  const std::string_view tracestate = request.headers.value("tracestate");
  return tracer->begin(traceparent, tracestate, repeated, span_name(route), trusted);
}

// Every X-Forwarded-For line, joined as one list.
std::string forwarded_for(const http::Request& request) {
  std::string joined;
  request.headers.for_each("X-Forwarded-For", [&](std::string_view value) {
    if (!joined.empty()) joined += ", ";
    joined += value;
  });
  return joined;
}

// The per-client limits for one request, asked only when it would go upstream.
class IpAdmission final : public Admission {
 public:
  IpAdmission(const ClientLimiters& limiters, boost::asio::ip::address client, Clock& clock)
      : limiters_(limiters), client_(std::move(client)), clock_(clock) {}
  bool admit(std::chrono::seconds& retry_after) override {
    return ask(limiters_.misses.get(), retry_after);
  }
  bool admit_unknown(std::chrono::seconds& retry_after) override {
    return ask(limiters_.unknown_ids.get(), retry_after);
  }
  void refund_unknown() override {
    if (client_policy::RateLimiter* limiter = limiters_.unknown_ids.get()) {
      limiter->refund(client_, clock_.steady_now());
    }
  }

 private:
  bool ask(client_policy::RateLimiter* limiter, std::chrono::seconds& retry_after) {
    if (limiter == nullptr) return true;
    auto decision = limiter->acquire(client_, clock_.steady_now());
    retry_after = decision.retry_after;
    return decision.allowed;
  }

  const ClientLimiters& limiters_;
  boost::asio::ip::address client_;
  Clock& clock_;
};

}  // namespace

http::Response method_not_allowed(std::string_view allow) {
  http::Response response = error_response(api::ErrorCode::method_not_allowed);
  response.add_header("Allow", allow);
  return response;
}

PublicHandler::PublicHandler(GatewayService& service, const Readiness& readiness, Clock& clock,
                             const config::Config& config, ClientLimiters limiters,
                             metrics::GatewayMetrics* metrics, accesslog::AccessLog* access_log,
                             tracing::Tracer* tracer)
    : service_(service),
      readiness_(readiness),
      clock_(clock),
      metrics_(metrics),
      access_log_(access_log),
      tracer_(tracer) {
  update(config, std::move(limiters));
}

void PublicHandler::update(const config::Config& config, ClientLimiters limiters) {
  auto as_seconds = [](config::Duration d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d);
  };
  settings_ = std::make_shared<const Settings>(Settings{
      api::WidgetPolicy(config.access.widget_pattern, config.access.widgets),
      ResponseOptions{
          as_seconds(config.cache.max_age_cap), as_seconds(config.cache.stale_while_revalidate),
          as_seconds(config.cache.stale_if_error), as_seconds(config.cache.negative_max_age)},
      client_policy::CorsPolicy(
          config.cors.allowed_origins,
          client_policy::CorsOptions{config.cors.allowed_headers, as_seconds(config.cors.max_age),
                                     config.cors.timing_allow_origin}),
      client_policy::TrustedProxies(config.access.trusted_proxies), std::move(limiters),
      config.server.public_readyz_detail});
}

http::Task<http::Response> PublicHandler::handle(const http::Request& request) {
  const SteadyTime started = clock_.steady_now();
  // Kept for the whole request: an update() while it waits must not pull it away.
  std::shared_ptr<const Settings> settings = settings_;
  Observation observation;
  api::RouteMatch match = api::match_route(request.target);
  tracing::RequestTrace trace = begin_trace(tracer_, request, settings->proxies, match.route);
  http::Response response;
  switch (match.route) {
    case api::Route::not_found:
      response = error_response(api::ErrorCode::not_found);
      break;
    case api::Route::healthz:
      response = is_get_or_head(request.method) ? local_json(200, "{\"status\":\"ok\"}")
                                                : method_not_allowed(kHealthMethods);
      break;
    case api::Route::readyz:
      response = is_get_or_head(request.method) ? readiness_.response(settings->readyz_detail)
                                                : method_not_allowed(kHealthMethods);
      break;
    case api::Route::widget:
    case api::Route::reviews: {
      // A hit is answered without a coroutine of its own; a miss goes on in one.
      std::unique_ptr<ApiMiss> miss;
      response = answer_api(request, match, *settings, observation, trace, miss);
      if (miss) {
        // The serving core's coroutines are of Asio's default type.
        auto served = http::await_default(
            serve_miss(request, std::move(miss), *settings, observation, trace));
        response = co_await std::move(served);
      }
      break;
    }
  }
  if (request.is_head() && response.body_mode == http::BodyMode::send) {
    response.body_mode = http::BodyMode::length_only;
  }
  // An id only when something needs it: the access log, or a recorded span.
  if (access_log_ && access_log_->enabled()) observation.trace_id = trace.trace_id_hex();
  observe(request, match.route, response, observation, started);
  if (trace.recording()) {
    tracing::Span& span = trace.span();
    span.set("http.request.method", std::string(request.method_text));
    span.set("http.response.status_code", static_cast<std::int64_t>(response.status));
    span.set("wg.cache", std::string(metrics::to_string(observation.cache)));
    if (!observation.widget.empty()) span.set("wg.widget", std::string(observation.widget));
    if (response.status >= 500) span.fail();
    trace.end();
  }
  co_return response;
}

std::optional<http::Response> PublicHandler::answer_before_body(const http::Request& request) {
  switch (api::match_route(request.target).route) {
    case api::Route::widget:
    case api::Route::reviews:
      if (is_get_or_head(request.method) || request.method == verb::options) break;
      return method_not_allowed(kApiMethods);
    case api::Route::healthz:
    case api::Route::readyz:
      if (is_get_or_head(request.method)) break;
      return method_not_allowed(kHealthMethods);
    case api::Route::not_found:
      break;
  }
  return std::nullopt;
}

http::Response PublicHandler::refuse(http::Refusal why) {
  // The output budget's 503 is a refusal of the gateway's own (the others say the request is
  // malformed, or the handler failed).
  if (why == http::Refusal::overloaded && metrics_) {
    metrics_->refused(metrics::RefusalReason::overloaded);
  }
  return refusal_response(why, Listener::public_api);
}

void PublicHandler::observe(const http::Request& request, api::Route route,
                            const http::Response& response, const Observation& observation,
                            SteadyTime started) {
  const double seconds = std::chrono::duration<double>(clock_.steady_now() - started).count();
  metrics::Route metric_route = metrics::Route::other;
  std::string_view route_name = "other";
  switch (route) {
    case api::Route::widget:
      metric_route = metrics::Route::widget;
      route_name = "widget";
      break;
    case api::Route::reviews:
      metric_route = metrics::Route::reviews;
      route_name = "reviews";
      break;
    case api::Route::healthz:
      metric_route = metrics::Route::healthz;
      route_name = "healthz";
      break;
    case api::Route::readyz:
      metric_route = metrics::Route::readyz;
      route_name = "readyz";
      break;
    case api::Route::not_found:
      break;
  }
  if (metrics_) metrics_->request(metric_route, response.status, observation.cache, seconds);
  if (access_log_ && access_log_->enabled()) {
    std::string client = observation.client.empty() ? request.peer.to_string() : observation.client;
    accesslog::Record record;
    record.time = clock_.wall_now();
    record.client = client;
    record.method = request.method_text;
    record.route = route_name;
    record.widget = observation.widget;
    record.status = response.status;
    record.cache = metrics::to_string(observation.cache);
    if (observation.refusal) record.reason = metrics::to_string(*observation.refusal);
    if (observation.upstream_ms >= 0) record.upstream_ms = observation.upstream_ms;
    record.bytes = response.body_mode == http::BodyMode::send ? response.body.size() : 0;
    record.duration_ms = seconds * 1000.0;
    record.trace_id = observation.trace_id;
    if (observation.query) {
      record.limit = observation.query->limit;
      record.skip = observation.query->skip;
      if (observation.query->type) record.type = api::to_string(*observation.query->type);
    }
    record.counts = widget_counts_.of(observation.widget_entry);
    access_log_->write(record);
  }
}

// What an API miss goes on with once the request is past its checks and its L1 lookup: on the
// heap, and only for a miss, so that a hit's coroutine frames stay small enough for Asio to
// recycle (about 1 KiB) and a hit allocates nothing for them.
struct PublicHandler::ApiMiss {
  api::ApiRequest request;
  FirstLook look;
  std::unique_ptr<Admission> admission;  // the per-client limits, when any is on
  RequestView view;
  bool logging = false;
};

http::Response PublicHandler::answer_api(const http::Request& request, const api::RouteMatch& match,
                                         const Settings& settings, Observation& observation,
                                         tracing::RequestTrace& trace,
                                         std::unique_ptr<ApiMiss>& miss) {
  const api::Endpoint endpoint =
      match.route == api::Route::widget ? api::Endpoint::widget : api::Endpoint::reviews;
  const RequestView view = request_view(request);
  auto with_cors = [&](http::Response response) {
    settings.cors.add_response_headers(view.origin, response.headers);
    if (settings.cors.vary_on_origin()) response.add_header("Vary", "Origin");
    return response;
  };

  if (request.method == verb::options) {
    if (!api::target_encoding_valid(match)) {
      return with_cors(error_response(api::ErrorCode::bad_request, endpoint));
    }
    http::Response response;
    response.status = 204;
    response.body_mode = http::BodyMode::none;
    response.add_header("Allow", kApiMethods);
    settings.cors.add_preflight_headers(
        view.origin, request.headers.value("Access-Control-Request-Method"),
        request.headers.value("Access-Control-Request-Headers"), response.headers);
    return response;
  }
  if (!is_get_or_head(request.method)) return with_cors(method_not_allowed(kApiMethods));

  api::ApiRequest& api_request = hit_request_;
  if (auto rejection = api::validate_api_request_into(match, settings.policy, api_request)) {
    return with_cors(rejection_response(*rejection, endpoint, settings.response));
  }
  observation.widget = match.raw_widget;

  std::optional<boost::asio::ip::address> limited_client;  // asked only if it would go upstream
  const bool logging = access_log_ && access_log_->enabled();
  const bool limited = settings.limiters.misses || settings.limiters.unknown_ids;
  if (limited || logging) {
    auto client = settings.proxies.client_address(request.peer, forwarded_for(request));
    if (logging) observation.client = client.to_string();
    if (limited) limited_client = client;
  }
  FirstLook& look = hit_look_;
  tracing::Span l1_lookup;
  if (trace.recording()) {
    l1_lookup = tracing::Span::child(trace.context(), "l1 lookup", tracing::SpanKind::internal);
  }
  std::optional<Served> hit = service_.serve_from_l1(api_request, look);
  l1_lookup.set("wg.hit", hit.has_value());
  l1_lookup.end();
  if (!hit) {
    look.annex = nullptr;  // read on the hit path only
    miss = std::make_unique<ApiMiss>(
        ApiMiss{std::move(api_request), std::move(look), nullptr, view, logging});
    if (limited_client) {
      miss->admission = std::make_unique<IpAdmission>(settings.limiters, *limited_client, clock_);
    }
    return {};
  }
  http::Response response = finish_api(request, std::move(*hit), endpoint, api_request, look, view,
                                       logging, settings, observation, true);
  look.own.reset();  // the answer holds the entry as long as it needs it; the buffer does not
  return response;
}

asio::awaitable<http::Response> PublicHandler::serve_miss(const http::Request& request,
                                                          std::unique_ptr<ApiMiss> miss,
                                                          const Settings& settings,
                                                          Observation& observation,
                                                          tracing::RequestTrace& trace) {
  Admission* asked = miss->admission.get();
  tracing::SpanContext context = trace.context();  // the request's, for what the miss does
  Served served = co_await service_.serve(miss->request, miss->look, asked, &context);
  const api::Endpoint endpoint = miss->request.endpoint;
  co_return finish_api(request, std::move(served), endpoint, miss->request, miss->look, miss->view,
                       miss->logging, settings, observation, false);
}

http::Response PublicHandler::finish_api(const http::Request& request, Served served,
                                         api::Endpoint endpoint, const api::ApiRequest& api_request,
                                         const FirstLook& look, const RequestView& view,
                                         bool logging, const Settings& settings,
                                         Observation& observation, bool hit) {
  // Only while the page still lacks a coding: its hits then skip parsing Accept-Encoding here
  // (the response builder parses it anyway).
  // Either makes a copy of the entry with one thing more (entries do not change once shared):
  // the answer is built from that copy.
  if (served.entry != nullptr && cache::lacks_codings(*served.entry)) {
    const client_policy::Coding wanted =
        client_policy::choose_coding(view.accept_encoding, true, true);
    if (wanted != client_policy::Coding::identity) {
      served.entry = service_.forms().with_coding(look.key, std::move(served.entry),
                                                  client_policy::coding_token(wanted));
    }
  }
  // A big body about to go whole and uncompressed to a client the session sends files to.
  if (served.entry != nullptr && request.sends_files && !request.is_head() &&
      served.entry->status == 200 && served.entry->body.size() >= cache::kBodyFileMinBytes &&
      !served.entry->body_file &&
      client_policy::choose_coding(view.accept_encoding, true, true) ==
          client_policy::Coding::identity) {
    served.entry = service_.forms().with_body_file(look.key, std::move(served.entry));
  }
  const cache::Entry* entry = served.entry.get();
  // Demand for the prefetch: answers with upstream's data only (never an unknown id's).
  if (entry != nullptr && entry->status == 200) service_.demand().note(look.key);
  if (logging) {  // what a replay of the log needs
    if (endpoint == api::Endpoint::reviews) observation.query = api_request.query;
    if (endpoint == api::Endpoint::widget) observation.widget_entry = served.entry;
  }
  observation.cache = cache_result_of(served);
  observation.upstream_ms = served.upstream_ms;
  if (entry != nullptr && metrics_ && observation.cache != metrics::CacheResult::empty) {
    metrics_->served_copy(entry->stored_at, served.now);
  }
  if (served.refusal) {  // an error, or the [] of empty_reviews_on_error in its place
    observation.refusal = served.refusal;
    if (metrics_) metrics_->refused(*served.refusal);
  }
  if (metrics_) metrics_->stale_served(served.outcome.stale());
  if (!hit) return build_response(served, endpoint, settings.response, view, settings.cors);
  // A copy made above replaced the one looked at, and its annex with it.
  KeptHeads heads{served.entry == look.own ? look.annex : nullptr, nullptr};
  http::Response response =
      build_response(served, endpoint, settings.response, view, settings.cors, &heads);
  if (heads.made) service_.keep_beside(look.key, entry, std::move(heads.made));
  return response;
}

}  // namespace wg::frontend
