// The contract's JSON errors as answers, and what each refusal of the HTTP sessions becomes on
// the public and the admin listener (the exact bytes that tests/hostile sees over sockets).

#include <boost/test/unit_test.hpp>
#include <string>
#include <string_view>

#include "frontend/error_response.hpp"
#include "widget_gateway/api/route.hpp"

using wg::api::ErrorCode;
using wg::frontend::Listener;
using wg::frontend::refusal_error;
using wg::frontend::refusal_response;
using wg::http::Refusal;

namespace {

struct Expected {
  Refusal why;
  unsigned status;
  std::string_view body;
};

// gateway-contract.md, "Errors": status, code, and the words the sessions have always given.
const Expected kExpected[] = {
    {Refusal::malformed, 400,
     R"({"error":{"status":400,"code":"bad_request","message":"malformed request"}})"},
    {Refusal::framing_conflict, 400,
     R"({"error":{"status":400,"code":"bad_request","message":"Transfer-Encoding with Content-Length"}})"},
    {Refusal::duplicate_host, 400,
     R"({"error":{"status":400,"code":"bad_request","message":"more than one Host header"}})"},
    {Refusal::missing_host, 400,
     R"({"error":{"status":400,"code":"bad_request","message":"HTTP/1.1 request without a Host header"}})"},
    {Refusal::missing_authority, 400,
     R"({"error":{"status":400,"code":"bad_request","message":"request without :authority or Host"}})"},
    {Refusal::authority_mismatch, 400,
     R"({"error":{"status":400,"code":"bad_request","message":"Host differs from :authority"}})"},
    {Refusal::target_too_long, 414,
     R"({"error":{"status":414,"code":"uri_too_long","message":"request target too long"}})"},
    {Refusal::head_too_large, 431,
     R"({"error":{"status":431,"code":"headers_too_large","message":"request header fields too large"}})"},
    {Refusal::body_too_large, 413,
     R"({"error":{"status":413,"code":"payload_too_large","message":"request body too large"}})"},
    {Refusal::tunnel, 405,
     R"({"error":{"status":405,"code":"method_not_allowed","message":"method not allowed"}})"},
    {Refusal::transfer_coding, 501,
     R"({"error":{"status":501,"code":"not_implemented","message":"transfer coding not implemented"}})"},
    {Refusal::version, 505,
     R"({"error":{"status":505,"code":"http_version_not_supported","message":"HTTP version not supported"}})"},
    {Refusal::overloaded, 503,
     R"({"error":{"status":503,"code":"service_unavailable","message":"too many answers waiting for slow clients; retry"}})"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(error_response_test)

BOOST_AUTO_TEST_CASE(every_refusal_has_an_answer) {
  BOOST_TEST(std::size(kExpected) + 1 == std::size(wg::http::kAllRefusals));  // + handler_failed
  for (Refusal why : wg::http::kAllRefusals) {
    for (Listener listener : {Listener::public_api, Listener::admin}) {
      const wg::http::Response response = refusal_response(why, listener);
      BOOST_TEST(response.status >= 400u);
      BOOST_TEST(response.headers.find("Content-Type") == "application/json");
      BOOST_TEST(response.headers.find("Cache-Control") == "no-store");
      BOOST_TEST((response.body_mode == wg::http::BodyMode::send));
      BOOST_TEST(response.body.starts_with(R"({"error":{"status":)"));
      // Refusals come before routing: none is about a widget.
      BOOST_TEST((refusal_error(why).code != ErrorCode::widget_not_found));
    }
  }
}

BOOST_AUTO_TEST_CASE(refusals_are_the_contracts_errors_on_both_listeners) {
  for (const Expected& e : kExpected) {
    for (Listener listener : {Listener::public_api, Listener::admin}) {
      const wg::http::Response response = refusal_response(e.why, listener);
      BOOST_TEST_CONTEXT("refusal " << static_cast<int>(e.why) << " listener "
                                    << static_cast<int>(listener)) {
        BOOST_TEST(response.status == e.status);
        BOOST_TEST(response.body == e.body);
        // Allow; Retry-After
        const std::size_t extra = e.why == Refusal::tunnel || e.why == Refusal::overloaded ? 1 : 0;
        BOOST_TEST(response.headers.size() == 2 + extra);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_tunnel_is_told_what_the_listener_takes) {
  const auto on_public = refusal_response(Refusal::tunnel, Listener::public_api);
  BOOST_TEST(on_public.headers.find("Allow") == wg::api::kApiMethods);
  BOOST_TEST(on_public.headers.find("Allow") == "GET, HEAD, OPTIONS");
  // The admin listener takes no OPTIONS, and POST on its purge and warm routes.
  const auto on_admin = refusal_response(Refusal::tunnel, Listener::admin);
  BOOST_TEST(on_admin.headers.find("Allow") == "GET, HEAD, POST");
  BOOST_TEST(refusal_response(Refusal::malformed, Listener::admin).headers.find("Allow") == "");
}

BOOST_AUTO_TEST_CASE(an_answer_over_the_output_budget_asks_for_a_retry) {
  for (Listener listener : {Listener::public_api, Listener::admin}) {
    const auto response = refusal_response(Refusal::overloaded, listener);
    BOOST_TEST(response.status == 503u);
    BOOST_TEST(response.headers.find("Retry-After") == "1");
  }
}

BOOST_AUTO_TEST_CASE(a_failed_handler_is_a_500) {
  for (Listener listener : {Listener::public_api, Listener::admin}) {
    const auto response = refusal_response(Refusal::handler_failed, listener);
    BOOST_TEST(response.status == 500u);
    BOOST_TEST(response.body.find(R"("code":"upstream_error","message":"internal error")") !=
               std::string_view::npos);
  }
}

BOOST_AUTO_TEST_CASE(errors_with_and_without_an_endpoint) {
  using wg::api::Endpoint;
  const auto widget = wg::frontend::error_response(ErrorCode::widget_not_found, Endpoint::widget);
  const auto reviews = wg::frontend::error_response(ErrorCode::widget_not_found, Endpoint::reviews);
  BOOST_TEST(widget.status == 404u);
  BOOST_TEST(reviews.status == 400u);

  const auto unauthorized = wg::frontend::error_response(ErrorCode::unauthorized);
  BOOST_TEST(unauthorized.status == 401u);
  BOOST_TEST(unauthorized.headers.find("WWW-Authenticate") == "Bearer");
  BOOST_TEST(
      unauthorized.body ==
      R"({"error":{"status":401,"code":"unauthorized","message":"a valid bearer token is required"}})");

  const auto why = wg::frontend::error_response(ErrorCode::bad_request, "entry needs one widget");
  BOOST_TEST(why.body ==
             R"({"error":{"status":400,"code":"bad_request","message":"entry needs one widget"}})");

  const auto cached = wg::frontend::error_response(ErrorCode::widget_not_found, Endpoint::widget,
                                                   {}, "public, max-age=60");
  BOOST_TEST(cached.headers.find("Cache-Control") == "public, max-age=60");
}

BOOST_AUTO_TEST_SUITE_END()  // error_response_test
