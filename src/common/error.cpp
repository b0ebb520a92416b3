#include "widget_gateway/common/error.hpp"

namespace wg {
namespace {

class GatewayCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "widget-gateway"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::ok:
        return "ok";
      case errc::upstream_connect_failed:
        return "upstream connect failed";
      case errc::upstream_timeout:
        return "upstream timed out";
      case errc::upstream_closed:
        return "upstream closed the connection";
      case errc::upstream_bad_status:
        return "upstream answered with an error status";
      case errc::upstream_invalid_body:
        return "upstream sent an invalid body";
      case errc::upstream_tls:
        return "upstream TLS verification failed";
      case errc::upstream_rate_limited:
        return "upstream is rate limiting";
      case errc::circuit_open:
        return "upstream circuit is open";
      case errc::quota_exhausted:
        return "monthly quota exhausted";
      case errc::upstream_unavailable:
        return "upstream is unavailable and asked to wait";
      case errc::upstream_busy:
        return "too many upstream requests in flight";
      case errc::quota_unavailable:
        return "the quota cannot be checked";
      case errc::unknown_budget_exhausted:
        return "the budget for unknown widget ids is spent";
      case errc::widget_paced:
        return "upstream requests for this widget are paced";
      case errc::redis_down:
        return "redis is not connected";
      case errc::redis_timeout:
        return "redis command timed out";
      case errc::redis_error:
        return "redis returned an error";
      case errc::redis_overloaded:
        return "too many redis commands pending";
      case errc::shutting_down:
        return "shutting down";
      case errc::overloaded:
        return "too many requests waiting";
    }
    return "unknown widget-gateway error";
  }
};

}  // namespace

const std::error_category& gateway_category() noexcept {
  static const GatewayCategory category;
  return category;
}

}  // namespace wg
