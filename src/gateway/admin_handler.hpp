#pragma once
// The admin listener (loopback by default): health and readiness without a token; /admin/*
// only with a configured token, and 404 when none is configured.

#include <atomic>
#include <memory>
#include <string>

#include "readiness.hpp"
#include "widget_gateway/http/request_handler.hpp"

namespace wg::metrics {
class Registry;
}
namespace wg::quota {
class QuotaCounter;
}

namespace wg::gateway {

class AdminHandler final : public http::RequestHandler {
 public:
  AdminHandler(const Readiness& readiness, const metrics::Registry& registry,
               const quota::QuotaCounter& quota, std::string token);

  boost::asio::awaitable<http::Response> handle(const http::Request& request) override;
  void set_token(std::string token);

 private:
  http::Response admin(const http::Request& request, std::string_view path);
  http::Response quota_status() const;

  const Readiness& readiness_;
  const metrics::Registry& registry_;
  const quota::QuotaCounter& quota_;
  std::atomic<std::shared_ptr<const std::string>> token_;
};

// Compares a presented bearer token with the configured one in time independent of where
// they differ.
bool token_matches(std::string_view presented, std::string_view expected);

}  // namespace wg::gateway
