#pragma once
// Turns a served cache entry (or a failure) into the HTTP answer: the upstream body bytes
// unchanged (or its stored gzip/br variant), with the contract's caching headers: ETag per
// coding, Cache-Control whose freshness for downstream caches ends when ours does (capped),
// Age, Vary, Cache-Status (RFC 9211), CORS, and 304 for a matching If-None-Match.

#include "answer_heads.hpp"
#include "serving/gateway_service.hpp"
#include "widget_gateway/client_policy/cors_policy.hpp"
#include "widget_gateway/http/request_handler.hpp"
#include "widget_gateway/http/response.hpp"

namespace wg::frontend {

// What the serving core answers with, read here.
using serving::Outcome;
using serving::Served;
using serving::StaleReason;

struct ResponseOptions {
  std::chrono::seconds max_age_cap{3600};
  std::chrono::seconds stale_while_revalidate{0};
  std::chrono::seconds stale_if_error{0};
  std::chrono::seconds negative_max_age{0};  // widget_not_found downstream; 0 = no-store
};

// What of the request the answer depends on.
struct RequestView {
  std::string_view accept_encoding;
  std::string_view if_none_match;
  std::string_view origin;
};
RequestView request_view(const http::Request& request);

// A plain hit's head kept beside its entry in the worker's L1: `kept`, found there (may be
// null); `made`, a set with the head this answer wrote, for the caller to keep there instead.
struct KeptHeads {
  const cache::L1Annex* kept = nullptr;
  std::unique_ptr<const cache::L1Annex> made;
};

// `heads` (may be null): where a plain hit's head is kept. A 200 or 304 is built from a head
// template (answer_heads.hpp) either way.
http::Response build_response(const Served& served, api::Endpoint endpoint,
                              const ResponseOptions& options, const RequestView& request,
                              const client_policy::CorsPolicy& cors, KeptHeads* heads = nullptr);

// A request refused before serving (validation): the contract's error; widget_not_found with
// the downstream freshness of a cached unknown widget.
http::Response rejection_response(const api::Rejection& rejection, api::Endpoint endpoint,
                                  const ResponseOptions& options);

// The Cache-Status field value (RFC 9211) for a served answer.
std::string cache_status(const Served& served);
// The same, appended to `out` (the hit path builds its headers in one buffer).
void append_cache_status(std::string& out, const Served& served);

// How long a downstream cache may keep an entry after receiving it: what remains of our
// freshness, capped. Sent twice, for both kinds of cache: as Cache-Control max-age = Age + this
// (a cache that subtracts Age, RFC 9111, keeps it this long), and as X-Accel-Expires = this
// (nginx proxy_cache ignores Age). A stale entry gets 0: stale downstream at once, and not
// stored by nginx.
long long downstream_seconds(const cache::Entry& entry, WallTime now, std::chrono::seconds cap);

}  // namespace wg::frontend
