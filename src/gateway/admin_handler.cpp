#include "admin_handler.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "public_handler.hpp"
#include "widget_gateway/metrics/registry.hpp"
#include "widget_gateway/quota/pacing.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/http/error_response.hpp"

namespace wg::gateway {
namespace asio = boost::asio;
using boost::beast::http::verb;

bool token_matches(std::string_view presented, std::string_view expected) {
  // Hash both so the comparison length never depends on the secret's length.
  unsigned char a[SHA256_DIGEST_LENGTH];
  unsigned char b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0 && !expected.empty();
}

http::Response AdminHandler::admin(const http::Request& request, std::string_view path) {
  const bool get = request.method == verb::get || request.method == verb::head;
  if (path == "/admin/quota") return get ? quota_status() : method_not_allowed("GET, HEAD");
  return http::error_response(api::ErrorCode::not_found);
}

http::Response AdminHandler::quota_status() const {
  quota::Snapshot s = quota_.snapshot();
  const WallTime now = SystemClock::instance().wall_now();
  const auto period = quota::quota_period(now, s.utc_offset);
  const std::uint64_t remaining = s.limit > s.used ? s.limit - s.used : 0;
  std::string body = "{\"month\":\"" + s.month + "\",\"used\":" + std::to_string(s.used) +
                     ",\"limit\":" + std::to_string(s.limit) + ",\"remaining\":" +
                     (s.limit == 0 ? std::string("null") : std::to_string(remaining)) +
                     ",\"resets_at\":\"" + quota::format_rfc3339(s.resets_at, s.utc_offset) +
                     "\",\"mode\":\"" + std::string(quota::to_string(s.mode)) +
                     "\",\"projected_month_end\":" +
                     std::to_string(quota::projected_month_end(s.used, now, period)) + "}";
  return local_json(200, std::move(body));
}

AdminHandler::AdminHandler(const Readiness& readiness, const metrics::Registry& registry,
                           const quota::QuotaCounter& quota, std::string token)
    : readiness_(readiness), registry_(registry), quota_(quota) {
  set_token(std::move(token));
}

void AdminHandler::set_token(std::string token) {
  token_.store(std::make_shared<const std::string>(std::move(token)));
}

asio::awaitable<http::Response> AdminHandler::handle(const http::Request& request) {
  std::string_view path = request.target.substr(0, request.target.find('?'));
  const bool get_or_head = request.method == verb::get || request.method == verb::head;
  http::Response response;
  if (path == "/healthz") {
    response =
        get_or_head ? local_json(200, "{\"status\":\"ok\"}") : method_not_allowed("GET, HEAD");
  } else if (path == "/readyz") {
    response = get_or_head ? readiness_.response() : method_not_allowed("GET, HEAD");
  } else if (path == "/metrics") {
    if (get_or_head) {
      response.status = 200;
      response.add_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      response.add_header("Cache-Control", "no-store");
      response.set_body(registry_.render());
    } else {
      response = method_not_allowed("GET, HEAD");
    }
  } else if (path.starts_with("/admin/")) {
    auto token = token_.load();
    if (token->empty()) {
      response = http::error_response(api::ErrorCode::not_found);
    } else {
      auto auth = request.headers.find(boost::beast::http::field::authorization);
      std::string_view presented;
      if (auth != request.headers.end()) presented = std::string_view(auth->value());
      constexpr std::string_view kBearer = "Bearer ";
      if (!presented.starts_with(kBearer) ||
          !token_matches(presented.substr(kBearer.size()), *token)) {
        response = http::error_response(api::ErrorCode::unauthorized);
      } else {
        response = admin(request, path);
      }
    }
  } else {
    response = http::error_response(api::ErrorCode::not_found);
  }
  if (request.is_head() && response.body_mode == http::BodyMode::send) {
    response.body_mode = http::BodyMode::length_only;
  }
  co_return response;
}

}  // namespace wg::gateway
