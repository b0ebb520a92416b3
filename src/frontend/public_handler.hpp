#pragma once
// The public listener's routes: the two API endpoints (GET, HEAD, OPTIONS), /healthz and
// /readyz. Checks run in the contract's order: route, method, query, widget id. Nothing else
// is ever forwarded upstream.

#include <atomic>
#include <memory>

#include "readiness.hpp"
#include "response_builder.hpp"
#include "serving/gateway_service.hpp"
#include "widget_counts.hpp"
#include "widget_gateway/accesslog/access_log.hpp"
#include "widget_gateway/api/route.hpp"
#include "widget_gateway/api/widget_policy.hpp"
#include "widget_gateway/client_policy/cors_policy.hpp"
#include "widget_gateway/client_policy/rate_limiter.hpp"
#include "widget_gateway/client_policy/trusted_proxies.hpp"
#include "widget_gateway/http/request_handler.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/tracing/tracer.hpp"

namespace wg::frontend {

using serving::Admission;
using serving::FirstLook;
using serving::GatewayService;

// The per-client limits every worker of the process shares, so a client's connections on
// different workers draw on one bucket. Null: that limit is off.
struct ClientLimiters {
  std::shared_ptr<client_policy::RateLimiter> misses;       // access.per_ip_rate
  std::shared_ptr<client_policy::RateLimiter> unknown_ids;  // access.unknown_per_ip_rate
};

// One per io worker; handle() and update() run on that worker's thread only.
class PublicHandler final : public http::RequestHandler {
 public:
  // `metrics`, `access_log` and `tracer` (the worker's) may be null (tests).
  PublicHandler(GatewayService& service, const Readiness& readiness, Clock& clock,
                const config::Config& config, ClientLimiters limiters,
                metrics::GatewayMetrics* metrics, accesslog::AccessLog* access_log,
                tracing::Tracer* tracer = nullptr);

  http::Task<http::Response> handle(const http::Request& request) override;
  // 405 for a method a public route never takes, before its body counts against any limit.
  std::optional<http::Response> answer_before_body(const http::Request& request) override;
  // What the sessions refuse, as the API's JSON errors.
  http::Response refuse(http::Refusal why) override;

  // Applies reloadable settings (widget policy, CORS, rate limits, header options, /readyz
  // detail); requests
  // in flight keep the settings they started with.
  void update(const config::Config& config, ClientLimiters limiters);

 private:
  struct Settings {
    api::WidgetPolicy policy;
    ResponseOptions response;
    client_policy::CorsPolicy cors;
    client_policy::TrustedProxies proxies;
    ClientLimiters limiters;
    bool readyz_detail = true;  // server.public_readyz_detail
  };
  // What the access log and the metrics learn about one API request.
  struct Observation {
    metrics::CacheResult cache = metrics::CacheResult::none;
    std::string_view widget;
    double upstream_ms = -1;
    std::string client;
    std::optional<metrics::RefusalReason> refusal;  // the gateway refused it itself
    std::string_view trace_id;                      // hex; empty: none
    // For a replay of the log: a reviews request's query, and the widget-data entry answered.
    std::optional<api::ReviewsQuery> query;
    std::shared_ptr<const cache::Entry> widget_entry;
  };
  struct ApiMiss;
  // An API request up to its L1 lookup, without waiting: the answer (a hit, a refusal, a
  // preflight), or, for a miss, an empty answer and in `miss` what serve_miss goes on with.
  http::Response answer_api(const http::Request& request, const api::RouteMatch& match,
                            const Settings& settings, Observation& observation,
                            tracing::RequestTrace& trace, std::unique_ptr<ApiMiss>& miss);
  boost::asio::awaitable<http::Response> serve_miss(const http::Request& request,
                                                    std::unique_ptr<ApiMiss> miss,
                                                    const Settings& settings,
                                                    Observation& observation,
                                                    tracing::RequestTrace& trace);
  // A hit's or a miss's answer from what was served: codings, a body file, demand, the
  // observation and the metrics, then the response. `hit`: from L1, in the call that looked
  // (its head is kept beside the entry there).
  http::Response finish_api(const http::Request& request, serving::Served served,
                            api::Endpoint endpoint, const api::ApiRequest& api_request,
                            const FirstLook& look, const RequestView& view, bool logging,
                            const Settings& settings, Observation& observation, bool hit);
  void observe(const http::Request& request, api::Route route, const http::Response& response,
               const Observation& observation, SteadyTime started);

  GatewayService& service_;
  const Readiness& readiness_;
  Clock& clock_;
  metrics::GatewayMetrics* metrics_;
  accesslog::AccessLog* access_log_;
  tracing::Tracer* tracer_;
  std::shared_ptr<const Settings> settings_;
  WidgetCounts widget_counts_;  // the access log's counts of widget-data answers
  // What answer_api fills for each API request on this worker (its io thread): their buffers
  // (the widget id, the key) keep their capacity from one hit to the next, so that a hit
  // allocates neither. A miss takes them along (the next request allocates them again).
  api::ApiRequest hit_request_;
  FirstLook hit_look_;
};

// 405 with the Allow header listing what the route accepts.
http::Response method_not_allowed(std::string_view allow);

}  // namespace wg::frontend
