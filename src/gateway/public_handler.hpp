#pragma once
// The public listener's routes: the two API endpoints (GET, HEAD, OPTIONS), /healthz and
// /readyz. Checks run in the contract's order: route, method, query, widget id. Nothing else
// is ever forwarded upstream.

#include <atomic>
#include <memory>

#include "gateway_service.hpp"
#include "readiness.hpp"
#include "response_builder.hpp"
#include "widget_gateway/api/route.hpp"
#include "widget_gateway/api/widget_policy.hpp"
#include "widget_gateway/http/request_handler.hpp"

namespace wg::gateway {

class PublicHandler final : public http::RequestHandler {
 public:
  PublicHandler(GatewayService& service, const Readiness& readiness, const config::Config& config);

  boost::asio::awaitable<http::Response> handle(const http::Request& request) override;

  // Applies reloadable settings (widget policy, header options); safe while requests run.
  void update(const config::Config& config);

 private:
  struct Settings {
    api::WidgetPolicy policy;
    ResponseOptions response;
  };
  boost::asio::awaitable<http::Response> handle_api(const http::Request& request,
                                                    const api::RouteMatch& match);

  GatewayService& service_;
  const Readiness& readiness_;
  std::atomic<std::shared_ptr<const Settings>> settings_;
};

// 405 with the Allow header listing what the route accepts.
http::Response method_not_allowed(std::string_view allow);

}  // namespace wg::gateway
