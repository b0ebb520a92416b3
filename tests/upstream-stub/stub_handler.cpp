#include "upstream-stub/stub_handler.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "widget_gateway/common/json_writer.hpp"

namespace wg::stub {
namespace {

namespace http = boost::beast::http;

constexpr std::size_t kMaxLimit = 300;
constexpr std::uint64_t kMaxLatencyMs = 600'000;
constexpr std::uint64_t kMaxDataDay = 3650;

// A non-negative decimal integer, nothing else (no sign, no spaces, no fraction).
std::optional<std::uint64_t> parse_uint(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The decoded value of the first `name` parameter; nullopt when absent ("" for `name=` or
// `name`).
std::optional<std::string> param(const boost::urls::url_view& url, std::string_view name) {
  for (const auto& p : url.params()) {
    if (p.key == name) return p.value;
  }
  return std::nullopt;
}

StubReply json_reply(std::string body) {
  StubReply reply;
  reply.body = std::move(body);
  return reply;
}

StubReply method_not_allowed(std::string_view allow) {
  StubReply reply = error_reply(http::status::method_not_allowed, "Method Not Allowed");
  reply.headers.emplace_back("Allow", std::string(allow));
  return reply;
}

// A body that a JSON parser must reject; what a misconfigured proxy might send with a 200.
constexpr std::string_view kNotJson =
    "<!DOCTYPE html><html><body><h1>Service temporarily unavailable</h1></body></html>";

// The widget body with its totalReviewAmount member dropped (`total` nullopt) or given another
// value. The dataset writes that member once, compact and followed by a comma; a quote inside
// a string is escaped, so the raw key cannot match anywhere else.
std::string with_total(std::string body, std::optional<std::string_view> total) {
  constexpr std::string_view kKey = "\"totalReviewAmount\":";
  const std::size_t start = body.find(kKey);
  if (start == std::string::npos) return body;  // not the dataset's shape: a bug
  const std::size_t value = start + kKey.size();
  const std::size_t comma = body.find(',', value);
  if (comma == std::string::npos) return body;
  if (total) {
    body.replace(value, comma - value, *total);
  } else {
    body.erase(start, comma + 1 - start);
  }
  return body;
}

// The widget body with every count at 0: totalReviewAmount, and each value of the
// reviewAmount and reviewStars objects (the dataset writes them compact, values plain
// integers). Well-formed and consistent: what a vendor's half-finished refresh looks like.
std::string with_zero_counts(std::string body) {
  body = with_total(std::move(body), "0");
  for (std::string_view object : {"\"reviewAmount\":{", "\"reviewStars\":{"}) {
    const std::size_t open = body.find(object);
    if (open == std::string::npos) continue;
    const std::size_t end = body.find('}', open + object.size());
    if (end == std::string::npos) continue;
    std::string counts = body.substr(open + object.size(), end - open - object.size());
    std::string zeroed;
    for (std::size_t at = 0; at < counts.size();) {
      const std::size_t colon = counts.find(':', at);
      if (colon == std::string::npos) break;
      zeroed.append(counts, at, colon + 1 - at).push_back('0');
      const std::size_t comma = counts.find(',', colon);
      if (comma == std::string::npos) break;
      zeroed.push_back(',');
      at = comma + 1;
    }
    body.replace(open + object.size(), end - open - object.size(), zeroed);
  }
  return body;
}

// The widget body with totalReviewAmount one more than it was: it no longer equals the sum of
// reviewAmount, so the counts contradict each other.
std::string with_contradicting_total(std::string body) {
  constexpr std::string_view kKey = "\"totalReviewAmount\":";
  const std::size_t start = body.find(kKey);
  if (start == std::string::npos) return body;
  const std::size_t value = start + kKey.size();
  const std::size_t comma = body.find(',', value);
  const auto total = parse_uint(std::string_view(body).substr(value, comma - value));
  if (comma == std::string::npos || !total) return body;
  return with_total(std::move(body), std::to_string(*total + 1));
}

// The widget body with one more `sources` entry, first in the list: `platform`, which the
// widget does not link (no count in reviewAmount, no reviews).
std::string with_uncounted_source(std::string body, std::string_view platform) {
  constexpr std::string_view kKey = "\"sources\":[";
  const std::size_t at = body.find(kKey);
  if (at == std::string::npos) return body;
  const std::size_t inside = at + kKey.size();
  std::string source = "{\"type\":\"" + std::string(platform) +
                       "\",\"url\":\"https://example.invalid/place\","
                       "\"updatedAt\":\"2026-01-01T00:00:00.000Z\"}";
  if (body[inside] != ']') source.push_back(',');
  body.insert(inside, source);
  return body;
}

// Sets the Retry-After a status fault was given in place of its default.
void apply_retry_after(StubReply& reply, const RetryAfter& retry_after) {
  if (retry_after.date) {
    reply.retry_after_date = retry_after.date;
  } else {
    reply.headers.emplace_back("Retry-After", retry_after.verbatim);
  }
}

enum class ApiRoute { widget, reviews };

struct ApiPath {
  ApiRoute route;
  std::string id;
};

// Matches /api/v1/widgets/widget/{id}/remote and /api/v1/widgets/widget/{id}/reviews/remote
// (segments percent-decoded; an empty id does not match).
std::optional<ApiPath> match_api(const boost::urls::url_view& url) {
  std::vector<std::string> segments;
  for (auto segment : url.segments()) {
    if (segments.size() == 7) return std::nullopt;
    segments.push_back(std::move(segment));
  }
  if (segments.size() < 6 || segments[0] != "api" || segments[1] != "v1" ||
      segments[2] != "widgets" || segments[3] != "widget" || segments[4].empty()) {
    return std::nullopt;
  }
  if (segments.size() == 6 && segments[5] == "remote") {
    return ApiPath{ApiRoute::widget, std::move(segments[4])};
  }
  if (segments.size() == 7 && segments[5] == "reviews" && segments[6] == "remote") {
    return ApiPath{ApiRoute::reviews, std::move(segments[4])};
  }
  return std::nullopt;
}

}  // namespace

StubReply error_reply(http::status status, std::string_view message) {
  StubReply reply;
  reply.status = status;
  reply.body = "{\"statusCode\":" + std::to_string(static_cast<unsigned>(status)) + ",\"message\":";
  json::append_string(reply.body, message);
  reply.body += ",\"error\":";
  json::append_string(reply.body, http::obsolete_reason(status));
  reply.body.push_back('}');
  return reply;
}

StubReply StubHandler::handle(http::verb method, std::string_view target,
                              std::string_view traceparent) {
  const auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) return error_reply(http::status::bad_request, "Invalid request target");
  const boost::urls::url_view& url = *parsed;
  const std::string_view path = url.encoded_path();
  if (path.starts_with("/__stub/")) return control(method, path, target);

  const auto api = match_api(url);
  if (!api)
    return error_reply(http::status::not_found,
                       "Cannot " + std::string(http::to_string(method)) + " " + std::string(path));

  // Every request on an API path counts, whatever happens to it next.
  (api->route == ApiRoute::widget ? widget_ : reviews_).fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(traceparents_mutex_);
    if (traceparents_.size() == kMaxTraceparents) traceparents_.pop_front();
    traceparents_.emplace_back(traceparent);
  }
  const auto delay = faults_.latency();
  const FaultPlan::Fault taken = faults_.take(
      api->route == ApiRoute::widget ? FaultEndpoint::widget : FaultEndpoint::reviews, api->id);
  const FaultMode fault = taken.mode;
  const bool bad_widget = fault == FaultMode::widget_no_total ||
                          fault == FaultMode::widget_bad_total ||
                          fault == FaultMode::widget_contradict;

  StubReply reply;
  switch (fault) {
    case FaultMode::status500:
      reply = error_reply(http::status::internal_server_error, "Internal server error");
      break;
    case FaultMode::status503:
      reply = error_reply(http::status::service_unavailable, "Service unavailable");
      break;
    case FaultMode::status429:
      reply = error_reply(http::status::too_many_requests, "Too many requests");
      if (!taken.retry_after) reply.headers.emplace_back("Retry-After", "1");
      break;
    case FaultMode::invalid_json:
      reply.body = kNotJson;
      break;
    case FaultMode::hang:
    case FaultMode::close:
      break;  // nothing is sent
    case FaultMode::widget_no_total:
    case FaultMode::widget_bad_total:
    case FaultMode::widget_contradict:
      if (api->route == ApiRoute::reviews) {
        reply.body = kNotJson;
        break;
      }
      [[fallthrough]];                 // the normal reply, its widget body altered below
    case FaultMode::empty_data:        // the normal reply, emptied below
    case FaultMode::uncounted_source:  // the normal reply, its widget body altered below
    case FaultMode::none:
    case FaultMode::truncate:  // the normal reply, cut short by the I/O shell
      if (method != http::verb::get && method != http::verb::head) {
        reply = method_not_allowed("GET, HEAD");
      } else if (api->route == ApiRoute::widget) {
        reply = widget(api->id);
      } else {
        reply = reviews(api->id, target);
      }
      break;
  }
  if (fault == FaultMode::empty_data && api->route == ApiRoute::reviews &&
      reply.status == http::status::ok) {
    reply.body = "[]";  // a valid request for a known widget, answered with an empty page
  } else if (api->route == ApiRoute::widget && reply.status == http::status::ok) {
    if (fault == FaultMode::empty_data) {
      reply.body = with_zero_counts(std::move(reply.body));
    } else if (fault == FaultMode::widget_contradict) {
      reply.body = with_contradicting_total(std::move(reply.body));
    } else if (fault == FaultMode::uncounted_source) {
      reply.body = with_uncounted_source(std::move(reply.body), unlinked_platform(api->id));
    } else if (bad_widget) {
      std::optional<std::string_view> total;  // none at all, or a string where a count belongs
      if (fault == FaultMode::widget_bad_total) total = "\"12\"";
      reply.body = with_total(std::move(reply.body), total);
    }
  }
  if (taken.retry_after) apply_retry_after(reply, *taken.retry_after);
  reply.cacheable = reply.status == http::status::ok;
  reply.fault = fault;
  reply.delay = delay;
  return reply;
}

std::string_view StubHandler::unlinked_platform(std::string_view id) const {
  const auto index = dataset_.find(id);
  if (!index) return kPlatforms.front();
  const auto& linked = dataset_.plan(*index).platforms;
  for (std::size_t p = 0; p < kPlatformCount; ++p) {
    const bool is_linked = std::any_of(linked.begin(), linked.end(),
                                       [&](const auto& platform) { return platform.first == p; });
    if (!is_linked) return kPlatforms[p];
  }
  return kPlatforms.front();  // links them all: the entry names one twice
}

StubReply StubHandler::widget(std::string_view id) {
  const auto index = dataset_.find(id);
  if (!index) return error_reply(http::status::not_found, "Widget not found");
  return json_reply(dataset_.rendered(*index)->body());
}

StubReply StubHandler::reviews(std::string_view id, std::string_view target) {
  const auto url = *boost::urls::parse_origin_form(target);  // already parsed once by handle()
  const auto limit_text = param(url, "limit");
  if (!limit_text) return error_reply(http::status::bad_request, "limit is required");
  const auto limit = parse_uint(*limit_text);
  if (!limit) return error_reply(http::status::bad_request, "limit must be a number");
  if (*limit > kMaxLimit) {
    return error_reply(http::status::bad_request, "limit must not be greater than 300");
  }
  std::uint64_t skip = 0;
  if (const auto skip_text = param(url, "skip")) {
    const auto parsed = parse_uint(*skip_text);
    if (!parsed)
      return error_reply(http::status::bad_request, "skip must be a non-negative number");
    skip = *parsed;
  }
  std::optional<std::size_t> platform;
  if (const auto type = param(url, "type")) {
    platform = platform_index(*type);
    if (!platform) return error_reply(http::status::bad_request, "type must be a platform code");
  }
  const auto index = dataset_.find(id);
  if (!index) return error_reply(http::status::bad_request, "Widget not found");
  return json_reply(dataset_.rendered(*index)->page(skip, *limit, platform));
}

StubReply StubHandler::control(http::verb method, std::string_view path, std::string_view target) {
  const auto url = *boost::urls::parse_origin_form(target);  // already parsed once by handle()

  if (path == "/__stub/stats") {
    if (method != http::verb::get) return method_not_allowed("GET");
    const StubStats s = stats();
    return json_reply("{\"widget\":" + std::to_string(s.widget) + ",\"reviews\":" +
                      std::to_string(s.reviews) + ",\"total\":" + std::to_string(s.total) +
                      ",\"connections\":" + std::to_string(s.connections) + "}");
  }
  if (path == "/__stub/traceparents") {
    if (method != http::verb::get) return method_not_allowed("GET");
    std::string body = "[";
    std::lock_guard lock(traceparents_mutex_);
    for (const std::string& value : traceparents_) {
      if (body.size() > 1) body.push_back(',');
      json::append_string(body, value);
    }
    return json_reply(body + "]");
  }
  if (path == "/__stub/reset") {
    if (method != http::verb::post) return method_not_allowed("POST");
    widget_.store(0);
    reviews_.store(0);
    connections_.store(0);
    faults_.reset();
    {
      std::lock_guard lock(traceparents_mutex_);
      traceparents_.clear();
    }
    return json_reply("{\"ok\":true}");
  }
  if (path == "/__stub/fault") {
    if (method != http::verb::post) return method_not_allowed("POST");
    const auto mode_text = param(url, "mode");
    const auto mode = mode_text ? parse_fault_mode(*mode_text) : std::nullopt;
    if (!mode) return error_reply(http::status::bad_request, "mode must be a fault mode");
    std::optional<std::uint64_t> count;
    if (const auto count_text = param(url, "count")) {
      count = parse_uint(*count_text);
      if (!count) return error_reply(http::status::bad_request, "count must be a number");
    }
    auto endpoint = std::optional<FaultEndpoint>(FaultEndpoint::any);
    if (const auto endpoint_text = param(url, "endpoint"))
      endpoint = parse_fault_endpoint(*endpoint_text);
    if (!endpoint)
      return error_reply(http::status::bad_request, "endpoint must be widget, reviews or any");
    std::optional<RetryAfter> retry_after;
    if (const auto retry_after_text = param(url, "retry_after")) {
      if (!takes_retry_after(*mode)) {
        return error_reply(http::status::bad_request,
                           "retry_after goes only with status500, status503 or status429");
      }
      retry_after = parse_retry_after(*retry_after_text);
      if (!retry_after) {
        return error_reply(http::status::bad_request,
                           "retry_after must be date:SECONDS or a header value");
      }
    }
    std::optional<std::string> widget = param(url, "widget");
    if (widget && widget->empty()) {
      return error_reply(http::status::bad_request, "widget must be a widget id");
    }
    faults_.set(*mode, count, *endpoint, std::move(retry_after), std::move(widget));
    const auto plan = faults_.snapshot();
    std::string body = "{\"mode\":";
    json::append_string(body, to_string(plan.mode));
    body += ",\"remaining\":" + (plan.remaining ? std::to_string(*plan.remaining) : "null");
    body += ",\"endpoint\":";
    json::append_string(body, to_string(plan.endpoint));
    body += ",\"retryAfter\":";
    if (plan.retry_after) {
      json::append_string(body, to_string(*plan.retry_after));
    } else {
      body += "null";
    }
    body += ",\"widget\":";
    if (plan.widget) {
      json::append_string(body, *plan.widget);
    } else {
      body += "null";
    }
    body.push_back('}');
    return json_reply(std::move(body));
  }
  if (path == "/__stub/latency") {
    if (method != http::verb::post) return method_not_allowed("POST");
    const auto ms_text = param(url, "ms");
    const auto ms = ms_text ? parse_uint(*ms_text) : std::nullopt;
    if (!ms || *ms > kMaxLatencyMs) {
      return error_reply(http::status::bad_request,
                         "ms must be a number of milliseconds <= 600000");
    }
    faults_.set_latency(std::chrono::milliseconds(*ms));
    return json_reply("{\"latencyMs\":" + std::to_string(*ms) + "}");
  }
  if (path == "/__stub/day") {
    if (method != http::verb::post) return method_not_allowed("POST");
    const auto n_text = param(url, "n");
    const auto n = n_text ? parse_uint(*n_text) : std::nullopt;
    if (!n || *n > kMaxDataDay) {
      return error_reply(http::status::bad_request, "n must be a data day <= 3650");
    }
    dataset_.set_day(static_cast<std::int64_t>(*n));
    return json_reply("{\"day\":" + std::to_string(*n) + "}");
  }
  if (path == "/__stub/widgets") {
    if (method != http::verb::get) return method_not_allowed("GET");
    std::optional<std::size_t> limit;
    if (const auto limit_text = param(url, "limit")) {
      const auto parsed = parse_uint(*limit_text);
      if (!parsed) return error_reply(http::status::bad_request, "limit must be a number");
      limit = static_cast<std::size_t>(*parsed);
    }
    return json_reply(dataset_.listing(limit));
  }
  return error_reply(http::status::not_found, "Unknown stub control");
}

StubStats StubHandler::stats() const {
  StubStats s;
  s.widget = widget_.load(std::memory_order_relaxed);
  s.reviews = reviews_.load(std::memory_order_relaxed);
  s.total = s.widget + s.reviews;
  s.connections = connections_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace wg::stub
