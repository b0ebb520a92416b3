#include "public_handler.hpp"

#include "widget_gateway/api/route.hpp"
#include "widget_gateway/api/validate.hpp"
#include "widget_gateway/http/error_response.hpp"

namespace wg::gateway {
namespace asio = boost::asio;
using boost::beast::http::verb;

namespace {

constexpr std::string_view kApiMethods = "GET, HEAD, OPTIONS";
constexpr std::string_view kHealthMethods = "GET, HEAD";

bool is_get_or_head(verb method) {
  return method == verb::get || method == verb::head;
}

}  // namespace

http::Response method_not_allowed(std::string_view allow) {
  http::Response response = http::error_response(api::ErrorCode::method_not_allowed);
  response.add_header("Allow", allow);
  return response;
}

PublicHandler::PublicHandler(GatewayService& service, const Readiness& readiness,
                             const config::Config& config)
    : service_(service), readiness_(readiness) {
  update(config);
}

void PublicHandler::update(const config::Config& config) {
  auto as_seconds = [](config::Duration d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d);
  };
  settings_.store(std::make_shared<const Settings>(
      Settings{api::WidgetPolicy(config.access.widget_pattern, config.access.widgets),
               ResponseOptions{as_seconds(config.cache.max_age_cap),
                               as_seconds(config.cache.stale_while_revalidate),
                               as_seconds(config.cache.stale_if_error)}}));
}

asio::awaitable<http::Response> PublicHandler::handle(const http::Request& request) {
  api::RouteMatch match = api::match_route(request.target);
  http::Response response;
  switch (match.route) {
    case api::Route::not_found:
      response = http::error_response(api::ErrorCode::not_found);
      break;
    case api::Route::healthz:
      response = is_get_or_head(request.method) ? local_json(200, "{\"status\":\"ok\"}")
                                                : method_not_allowed(kHealthMethods);
      break;
    case api::Route::readyz:
      response = is_get_or_head(request.method) ? readiness_.response()
                                                : method_not_allowed(kHealthMethods);
      break;
    case api::Route::widget:
    case api::Route::reviews:
      response = co_await handle_api(request, match);
      break;
  }
  if (request.is_head() && response.body_mode == http::BodyMode::send) {
    response.body_mode = http::BodyMode::length_only;
  }
  co_return response;
}

asio::awaitable<http::Response> PublicHandler::handle_api(const http::Request& request,
                                                          const api::RouteMatch& match) {
  const api::Endpoint endpoint =
      match.route == api::Route::widget ? api::Endpoint::widget : api::Endpoint::reviews;

  if (request.method == verb::options) {
    if (!api::target_encoding_valid(match)) {
      co_return http::error_response(api::ErrorCode::bad_request, endpoint);
    }
    http::Response response;
    response.status = 204;
    response.body_mode = http::BodyMode::none;
    response.add_header("Allow", kApiMethods);
    co_return response;
  }
  if (!is_get_or_head(request.method)) co_return method_not_allowed(kApiMethods);

  auto settings = settings_.load();
  auto validated = api::validate_api_request(match, settings->policy);
  if (auto* rejection = std::get_if<api::Rejection>(&validated)) {
    co_return http::error_response(rejection->code, endpoint, rejection->message);
  }
  const auto& api_request = std::get<api::ApiRequest>(validated);
  Served served = co_await service_.serve(api_request);
  co_return build_response(served, endpoint, settings->response);
}

}  // namespace wg::gateway
