#include "response_builder.hpp"

#include <algorithm>

#include "widget_gateway/http/error_response.hpp"

namespace wg::gateway {

namespace {

long long seconds_between(WallTime from, WallTime to) {
  return std::chrono::duration_cast<std::chrono::seconds>(to - from).count();
}

}  // namespace

std::string cache_status(const Served& served) {
  std::string value = "widget-gateway; ";
  switch (served.result) {
    case CacheResult::hit: {
      value += "hit; ttl=";
      value += std::to_string(seconds_between(served.now, served.entry->fresh_until));
      break;
    }
    case CacheResult::collapsed:
      value += "hit; collapsed";
      break;
    case CacheResult::miss:
      value += "fwd=uri-miss";
      if (served.stored) value += "; stored";
      break;
  }
  return value;
}

http::Response build_response(const Served& served, api::Endpoint endpoint,
                              const ResponseOptions& options) {
  if (!served.ok()) {
    http::Response response = http::error_response(served.error, endpoint);
    if (served.error == api::ErrorCode::quota_exhausted) {
      response.add_header("Retry-After", std::to_string(served.retry_after.count()));
    }
    return response;
  }
  const cache::Entry& entry = *served.entry;
  if (entry.status != 200) {
    // A cached "unknown widget": the same error, with upstream's status.
    http::Response response = http::error_response(api::ErrorCode::widget_not_found, endpoint);
    response.status = entry.status;
    response.add_header("Cache-Status", cache_status(served));
    return response;
  }

  http::Response response;
  response.status = 200;
  response.add_header("Content-Type", "application/json; charset=utf-8");
  response.add_header("ETag", entry.etag);

  long long fresh_for = std::max(0LL, seconds_between(served.now, entry.fresh_until));
  long long max_age = std::min<long long>(fresh_for, options.max_age_cap.count());
  std::string cache_control = "public, max-age=" + std::to_string(max_age);
  if (options.stale_while_revalidate.count() > 0)
    cache_control +=
        ", stale-while-revalidate=" + std::to_string(options.stale_while_revalidate.count());
  if (options.stale_if_error.count() > 0)
    cache_control += ", stale-if-error=" + std::to_string(options.stale_if_error.count());
  response.add_header("Cache-Control", cache_control);
  response.add_header("Age",
                      std::to_string(std::max(0LL, seconds_between(entry.stored_at, served.now))));
  response.add_header("Vary", "Accept-Encoding");
  response.add_header("Cache-Status", cache_status(served));
  response.body = entry.body;
  response.body_owner = served.entry;
  return response;
}

}  // namespace wg::gateway
