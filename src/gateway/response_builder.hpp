#pragma once
// Turns a served cache entry (or a failure) into the HTTP answer: the upstream body bytes
// unchanged, with the caching headers of the contract.

#include "gateway_service.hpp"
#include "widget_gateway/http/response.hpp"

namespace wg::gateway {

struct ResponseOptions {
  std::chrono::seconds max_age_cap{3600};
  std::chrono::seconds stale_while_revalidate{0};
  std::chrono::seconds stale_if_error{0};
};

http::Response build_response(const Served& served, api::Endpoint endpoint,
                              const ResponseOptions& options);

// The Cache-Status field value (RFC 9211) for a served answer.
std::string cache_status(const Served& served);

}  // namespace wg::gateway
