#include "response_builder.hpp"

#include <algorithm>
#include <charconv>

#include "error_response.hpp"
#include "widget_gateway/cache/l1_cache.hpp"
#include "widget_gateway/client_policy/coding.hpp"
#include "widget_gateway/client_policy/conditional.hpp"

namespace wg::frontend {

namespace {

void append_number(std::string& out, long long value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

long long seconds_between(WallTime from, WallTime to) {
  return std::chrono::duration_cast<std::chrono::seconds>(to - from).count();
}

const std::string* variant_body(const cache::Entry& entry, client_policy::Coding coding) {
  for (const auto& [token, body] : entry.variants) {
    if (client_policy::coding_from_token(token) == coding) return &body;
  }
  return nullptr;
}

// The Vary line of an answer that depends on the coding asked for, on the Origin (a CORS
// allowlist), on both, or on neither (empty: no line).
std::string_view vary_value(bool varies_on_coding, bool varies_on_origin) {
  if (varies_on_coding && varies_on_origin) return "Accept-Encoding, Origin";
  if (varies_on_coding) return "Accept-Encoding";
  return varies_on_origin ? "Origin" : "";
}

void add_vary(http::Response& response, const client_policy::CorsPolicy& cors,
              bool varies_on_coding) {
  const std::string_view vary = vary_value(varies_on_coding, cors.vary_on_origin());
  if (!vary.empty()) response.add_header("Vary", vary);
}

// An unknown widget stays unknown until upstream's next refresh: downstream caches may keep
// the answer for negative_max_age (capped like any answer), so a CDN absorbs floods of one bad
// id. Every other error is no-store.
http::Response error_with_policy(api::ErrorCode code, api::Endpoint endpoint,
                                 std::string_view message, const ResponseOptions& options) {
  const long long keep = std::min(options.negative_max_age, options.max_age_cap).count();
  if (code != api::ErrorCode::widget_not_found || keep <= 0) {
    return error_response(code, endpoint, message);
  }
  const std::string seconds = std::to_string(keep);
  http::Response response = error_response(code, endpoint, message, "public, max-age=" + seconds);
  response.add_header("X-Accel-Expires", seconds);
  return response;
}

http::Response error_answer(const Served& served, api::ErrorCode code, unsigned status,
                            api::Endpoint endpoint, const RequestView& request,
                            const ResponseOptions& options, const client_policy::CorsPolicy& cors) {
  http::Response response = error_with_policy(code, endpoint, served.message, options);
  response.status = status;
  // 429s always say when to come back; other refusals do when they know (upstream's own
  // Retry-After, a full upstream queue, the quota unreachable, the circuit's pause). A real
  // upstream failure has none.
  if (code == api::ErrorCode::quota_exhausted || code == api::ErrorCode::rate_limited ||
      served.retry_after.count() > 0) {
    response.add_header("Retry-After", std::to_string(served.retry_after.count()));
  }
  if (served.ok()) response.add_header("Cache-Status", cache_status(served));
  cors.add_response_headers(request.origin, response.headers);
  add_vary(response, cors, false);
  return response;
}

// Cache-Status (RFC 9211) up to its ttl figure, and after it.
void append_cache_status_before_ttl(std::string& out, const Outcome& outcome) {
  out.append("widget-gateway; ");
  if (outcome.detail == Outcome::Detail::stale_if_error) {
    out.append("fwd=stale; ttl=");
  } else if (outcome.source == Outcome::Source::upstream) {
    out.append(outcome.stored ? "fwd=uri-miss; stored; ttl=" : "fwd=uri-miss; ttl=");
  } else {
    out.append("hit; ttl=");
  }
}

void append_cache_status_after_ttl(std::string& out, const Outcome& outcome) {
  const bool stale_if_error = outcome.detail == Outcome::Detail::stale_if_error;
  if (!stale_if_error && outcome.source == Outcome::Source::collapsed) out.append("; collapsed");
  if (outcome.detail != Outcome::Detail::none) {
    out.append("; detail=").append(detail_of(outcome.detail));
  }
}

// The numbers a hit's head leaves as slots.
enum HeadSlot : std::size_t { kMaxAgeSlot, kDownstreamSlot, kAgeSlot, kTtlSlot };

// The fields of a 200 of `entry` in `coding`, in the order they are sent, with slots for the
// numbers each answer fills in. Content-Type comes first: a 304 leaves it out.
AnswerHeads::HeadPtr make_hit_head(const cache::Entry& entry, client_policy::Coding coding,
                                   const AnswerHeads::Shape& shape, const Outcome& outcome) {
  auto head = std::make_shared<http::HeadTemplate>();
  head->add("Content-Type", "application/json; charset=utf-8");
  if (coding != client_policy::Coding::identity) {
    head->add("Content-Encoding", client_policy::coding_token(coding));
  }
  std::string text;
  client_policy::append_etag_for_coding(text, entry.etag, coding);
  head->add("ETag", text);
  text.clear();
  if (shape.stale_while_revalidate > 0) {
    text.append(", stale-while-revalidate=");
    append_number(text, shape.stale_while_revalidate);
  }
  if (shape.stale_if_error > 0) {
    text.append(", stale-if-error=");
    append_number(text, shape.stale_if_error);
  }
  head->add_number("Cache-Control", "public, max-age=", kMaxAgeSlot, text);
  // After Cache-Control: nginx reads its stale-* extensions only when it meets them before
  // X-Accel-Expires, which then replaces max-age alone.
  head->add_number("X-Accel-Expires", "", kDownstreamSlot);
  head->add_number("Age", "", kAgeSlot);
  head->add("Accept-Ranges", "none");
  head->add("Vary", vary_value(true, shape.vary_on_origin));
  text.clear();
  append_cache_status_before_ttl(text, outcome);
  std::string after;
  append_cache_status_after_ttl(after, outcome);
  head->add_number("Cache-Status", text, kTtlSlot, after);
  return head;
}

// A hit from L1, whose head a worker keeps beside the entry: its Cache-Status is "hit" with
// the shape's detail.
bool plain_hit(const Outcome& outcome) {
  return outcome.source == Outcome::Source::cache && !outcome.stored;
}

}  // namespace

http::Response rejection_response(const api::Rejection& rejection, api::Endpoint endpoint,
                                  const ResponseOptions& options) {
  return error_with_policy(rejection.code, endpoint, rejection.message, options);
}

RequestView request_view(const http::Request& request) {
  return {request.headers.value("Accept-Encoding"), request.headers.value("If-None-Match"),
          request.headers.value("Origin")};
}

long long downstream_seconds(const cache::Entry& entry, WallTime now, std::chrono::seconds cap) {
  const long long remaining = std::max(0LL, seconds_between(now, entry.fresh_until));
  return std::min<long long>(remaining, cap.count());
}

void append_cache_status(std::string& out, const Served& served) {
  const Outcome& outcome = served.outcome;
  if (outcome.detail == Outcome::Detail::empty_on_error) {
    // Not a copy: nothing matched the request, and the [] stands in for an error.
    out.append("widget-gateway; fwd=uri-miss; detail=empty-on-error");
    return;
  }
  append_cache_status_before_ttl(out, outcome);
  append_number(out, served.entry ? seconds_between(served.now, served.entry->fresh_until) : 0);
  append_cache_status_after_ttl(out, outcome);
}

std::string cache_status(const Served& served) {
  std::string value;
  append_cache_status(value, served);
  return value;
}

http::Response build_response(const Served& served, api::Endpoint endpoint,
                              const ResponseOptions& options, const RequestView& request,
                              const client_policy::CorsPolicy& cors, KeptHeads* heads) {
  if (!served.ok()) {
    return error_answer(served, served.error, api::error_info(served.error, endpoint).status,
                        endpoint, request, options, cors);
  }
  const cache::Entry& entry = *served.entry;
  if (served.outcome.detail == Outcome::Detail::empty_on_error) {
    // An empty review block in place of a 429 or 5xx (cache.empty_reviews_on_error): never
    // kept by anyone, so that the real answer replaces it as soon as there is one.
    http::Response response;
    response.status = 200;
    response.headers.add("Content-Type", "application/json; charset=utf-8");
    response.headers.add("Cache-Control", "no-store");
    response.headers.add("Accept-Ranges", "none");
    add_vary(response, cors, false);
    append_cache_status(response.headers.start("Cache-Status"), served);
    cors.add_response_headers(request.origin, response.headers);
    response.body = entry.body;
    response.body_owner = served.entry;
    return response;
  }
  if (entry.status != 200) {
    // A cached "unknown widget": the same error, with upstream's status.
    return error_answer(served, api::ErrorCode::widget_not_found, entry.status, endpoint, request,
                        options, cors);
  }

  const std::string* gzip = variant_body(entry, client_policy::Coding::gzip);
  const std::string* br = variant_body(entry, client_policy::Coding::br);
  client_policy::Coding coding =
      client_policy::choose_coding(request.accept_encoding, gzip != nullptr, br != nullptr);
  const client_policy::CodingSet listed =
      request.if_none_match.empty()
          ? client_policy::CodingSet{}
          : client_policy::if_none_match_codings(request.if_none_match, entry.etag);
  const bool not_modified = listed.any();
  if (not_modified) {
    // Name the coding the client holds, so that its cache can select that stored response. A
    // 304 carries no bytes: a coding this worker would make on demand counts as one it has
    // (another worker may have served it), so every worker answers alike.
    const bool on_demand = entry.compress_on_demand;
    coding = client_policy::coding_for_not_modified(listed, coding, request.accept_encoding,
                                                    gzip != nullptr || on_demand,
                                                    br != nullptr || on_demand);
  }
  const std::string* body = coding == client_policy::Coding::br     ? br
                            : coding == client_policy::Coding::gzip ? gzip
                                                                    : &entry.body;

  // The fixed fields from the head kept beside the entry, or written now (and kept).
  const AnswerHeads::Shape shape{options.stale_while_revalidate.count(),
                                 options.stale_if_error.count(), cors.vary_on_origin(),
                                 served.outcome.detail};
  const bool keeps = heads != nullptr && plain_hit(served.outcome);
  // Only the frontend attaches annexes to L1 entries, and only AnswerHeads.
  const auto* kept = keeps ? static_cast<const AnswerHeads*>(heads->kept) : nullptr;
  AnswerHeads::HeadPtr head = kept != nullptr ? kept->find(coding, shape) : nullptr;
  if (!head) {
    head = make_hit_head(entry, coding, shape, served.outcome);
    if (keeps) {
      heads->made = kept != nullptr ? kept->with(coding, head, shape)
                                    : AnswerHeads(shape).with(coding, head, shape);
    }
  }

  http::Response response;
  response.status = not_modified ? 304 : 200;
  response.template_first = not_modified ? 1 : 0;  // no Content-Type
  response.head_template = std::move(head);
  const long long downstream = downstream_seconds(entry, served.now, options.max_age_cap);
  const long long age = std::max(0LL, seconds_between(entry.stored_at, served.now));
  response.numbers[kMaxAgeSlot] = age + downstream;
  response.numbers[kDownstreamSlot] = downstream;
  response.numbers[kAgeSlot] = age;
  response.numbers[kTtlSlot] = seconds_between(served.now, entry.fresh_until);
  cors.add_response_headers(request.origin, response.headers);

  if (not_modified) {
    response.body_mode = http::BodyMode::none;
  } else {
    response.body = *body;
    if (body == &entry.body && entry.body_file) response.body_file = entry.body_file->fd();
    response.body_owner = served.entry;
    // The answer keeps the whole entry alive, every coding included, even once L1 let it go.
    response.owner_bytes = cache::charged_bytes({}, entry);
  }
  return response;
}

}  // namespace wg::frontend
