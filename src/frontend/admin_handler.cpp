#include "admin_handler.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <simdjson.h>
#include <algorithm>

#include "entry_report.hpp"
#include "error_response.hpp"
#include "public_handler.hpp"
#include "status_page.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/api/percent.hpp"
#include "widget_gateway/api/validate.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/common/json_writer.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/config/loader.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/metrics/registry.hpp"
#include "widget_gateway/quota/quota_counter.hpp"

namespace wg::frontend {
namespace asio = boost::asio;
using boost::beast::http::verb;

namespace {

http::Response bad_request(std::string_view why) {
  return error_response(api::ErrorCode::bad_request, why);
}

// The decoded value of the one `name` parameter of a query; nullopt when absent, repeated or
// malformed.
std::optional<std::string> query_param(std::string_view target, std::string_view name) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  std::optional<std::string> found;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    auto key = api::percent_decode(pair.substr(0, eq));
    if (!key || *key != name) continue;
    if (found) return std::nullopt;
    auto value = api::percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (!value) return std::nullopt;
    found = std::move(*value);
  }
  return found;
}

// Widgets /admin/top-widgets lists by default, and at most.
constexpr std::size_t kDefaultTopWidgets = 10;
constexpr std::size_t kMaxTopWidgets = 100;

// API requests so far: all that were answered (errors excluded), and how: fresh hits (a fresh
// copy, a derived page, a local answer, a wait on another request's fetch), stale answers,
// copies that hold back an upstream answer (unconfirmed), the [] of empty_reviews_on_error, and
// misses. A stale answer is not a hit here, however Cache-Status words it: a hit ratio that
// counts them hides an outage.
struct ApiTotals {
  std::uint64_t requests = 0;
  std::uint64_t fresh = 0;
  std::uint64_t stale = 0;
  std::uint64_t unconfirmed = 0;
  std::uint64_t empty = 0;
  std::uint64_t miss = 0;
};

ApiTotals api_totals(const metrics::GatewayMetrics* metrics) {
  if (!metrics) return {};
  using metrics::CacheResult;
  const auto by_result = metrics->api_requests_by_cache_result();
  auto of = [&](CacheResult r) { return by_result[static_cast<std::size_t>(r)]; };
  ApiTotals totals;
  totals.fresh = of(CacheResult::hit) + of(CacheResult::derived) + of(CacheResult::local) +
                 of(CacheResult::collapsed);
  totals.stale = of(CacheResult::stale);
  totals.unconfirmed = of(CacheResult::unconfirmed);
  totals.empty = of(CacheResult::empty);
  totals.miss = of(CacheResult::miss);
  totals.requests = totals.fresh + totals.stale + totals.unconfirmed + totals.empty + totals.miss;
  return totals;
}

// At most this many keys pending confirmation are listed (the oldest first).
constexpr std::size_t kListedHolds = 50;

}  // namespace

bool token_matches(std::string_view presented, std::string_view expected) {
  // Hash both so the comparison length never depends on the secret's length.
  unsigned char a[SHA256_DIGEST_LENGTH];
  unsigned char b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0 && !expected.empty();
}

AdminHandler::AdminHandler(AdminDependencies deps, std::string token) : deps_(deps) {
  set_token(std::move(token));
}

void AdminHandler::set_token(std::string token) {
  token_.store(std::make_shared<const std::string>(std::move(token)));
}

void AdminHandler::show_config(const config::Config& running) {
  // Printed once per reload, not per request; the same text --check-config prints.
  config_toml_.store(
      std::make_shared<const std::string>(config::to_toml(running, config::Secrets::redact)));
  derive_pages_.store(running.cache.derive_pages, std::memory_order_relaxed);
}

void AdminHandler::sample() {
  const quota::Snapshot q = deps_.quota.snapshot();
  const WallTime now = deps_.clock.wall_now();
  burn_.record(now, quota::quota_period(now, q.utc_offset), q.utc_offset, q.used, q.limit);
  const ApiTotals totals = api_totals(deps_.metrics);
  traffic_.record({deps_.clock.steady_now(), totals.requests, totals.fresh});
}

http::Task<http::Response> AdminHandler::handle(const http::Request& request) {
  auto answered = http::await_default(answer(request));
  co_return co_await std::move(answered);
}

asio::awaitable<http::Response> AdminHandler::answer(const http::Request& request) {
  std::string_view path = request.target.substr(0, request.target.find('?'));
  const bool get_or_head = request.method == verb::get || request.method == verb::head;
  http::Response response;
  if (path == "/healthz") {
    response =
        get_or_head ? local_json(200, "{\"status\":\"ok\"}") : method_not_allowed("GET, HEAD");
  } else if (path == "/readyz") {
    response = get_or_head ? deps_.readiness.response() : method_not_allowed("GET, HEAD");
  } else if (path == "/metrics") {
    if (get_or_head) {
      response.status = 200;
      response.add_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      response.add_header("Cache-Control", "no-store");
      response.set_body(deps_.registry.render());
    } else {
      response = method_not_allowed("GET, HEAD");
    }
  } else if (path.starts_with("/admin/")) {
    auto token = token_.load();
    if (token->empty()) {
      response = error_response(api::ErrorCode::not_found);
    } else if (path == "/admin/ui") {
      // No data in it, so no token needed to load it: the token is typed into the page, which
      // sends it to the JSON endpoints below, never in a URL.
      response = get_or_head ? status_page_response() : method_not_allowed("GET, HEAD");
    } else {
      const std::string_view presented = request.headers.value("Authorization");
      constexpr std::string_view kBearer = "Bearer ";
      if (!presented.starts_with(kBearer) ||
          !token_matches(presented.substr(kBearer.size()), *token)) {
        response = error_response(api::ErrorCode::unauthorized);
      } else {
        response = co_await admin(request, path);
      }
    }
  } else {
    response = error_response(api::ErrorCode::not_found);
  }
  if (request.is_head() && response.body_mode == http::BodyMode::send) {
    response.body_mode = http::BodyMode::length_only;
  }
  co_return response;
}

http::Response AdminHandler::refuse(http::Refusal why) {
  return refusal_response(why, Listener::admin);
}

asio::awaitable<http::Response> AdminHandler::admin(const http::Request& request,
                                                    std::string_view path) {
  const bool get = request.method == verb::get || request.method == verb::head;
  const bool post = request.method == verb::post;
  if (path == "/admin/quota") co_return get ? quota_status() : method_not_allowed("GET, HEAD");
  if (path == "/admin/config") {
    if (!get) co_return method_not_allowed("GET, HEAD");
    http::Response response;
    response.status = 200;
    response.add_header("Content-Type", "application/toml; charset=utf-8");
    response.add_header("Cache-Control", "no-store");
    const auto text = config_toml_.load();
    response.set_body(text ? *text : std::string());
    co_return response;
  }
  if (path == "/admin/status") {
    if (!get) co_return method_not_allowed("GET, HEAD");
    co_return co_await status();
  }
  if (path == "/admin/top-widgets") {
    if (!get) co_return method_not_allowed("GET, HEAD");
    co_return co_await top_widgets(request);
  }
  if (path == "/admin/entry") {
    if (!get) co_return method_not_allowed("GET, HEAD");
    co_return co_await entry(request);
  }
  if (path == "/admin/purge" || path == "/admin/purge-all") {
    if (!post) co_return method_not_allowed("POST");
    co_return co_await purge(request, path == "/admin/purge-all");
  }
  if (path == "/admin/warm") {
    if (!post) co_return method_not_allowed("POST");
    co_return co_await warm(request);
  }
  co_return error_response(api::ErrorCode::not_found);
}

http::Response AdminHandler::quota_status() const {
  quota::Snapshot s = deps_.quota.snapshot();
  const std::optional<std::uint64_t> remaining = s.remaining();  // null: no limit
  std::string body =
      "{\"month\":\"" + s.month + "\",\"used\":" + std::to_string(s.used) +
      ",\"limit\":" + std::to_string(s.limit) +
      ",\"remaining\":" + (remaining ? std::to_string(*remaining) : std::string("null")) +
      ",\"leased\":" + std::to_string(s.leased) + ",\"own_lease\":" + std::to_string(s.own_lease) +
      ",\"unknown_used\":" + std::to_string(s.unknown_used) + ",\"unknown_limit\":" +
      (s.unknown_limit ? std::to_string(*s.unknown_limit) : std::string("null")) +
      ",\"resets_at\":\"" + quota::format_rfc3339(s.resets_at, s.utc_offset) + "\",\"mode\":\"" +
      std::string(quota::to_string(s.mode)) +
      "\",\"projected_month_end\":" + std::to_string(s.projected_month_end) + "}";
  return local_json(200, std::move(body));
}

asio::awaitable<http::Response> AdminHandler::status() {
  StatusFacts facts;
  facts.now = deps_.clock.wall_now();
  facts.quota = deps_.quota.snapshot();
  const auto period = quota::quota_period(facts.now, facts.quota.utc_offset);
  facts.month_starts_at = period.starts_at;
  facts.history = burn_.samples();
  facts.today = burn_.today();
  facts.traffic = traffic_.rates();
  const ApiTotals totals = api_totals(deps_.metrics);
  facts.api_requests = totals.requests;
  facts.from_cache = totals.fresh;
  FreshnessFacts& fresh = facts.freshness;
  fresh.fresh = totals.fresh;
  fresh.stale = totals.stale;
  fresh.unconfirmed = totals.unconfirmed;
  fresh.empty = totals.empty;
  fresh.miss = totals.miss;
  if (deps_.metrics) {
    fresh.stale_by_reason = deps_.metrics->stale_answers_by_reason();
    fresh.refreshes = deps_.metrics->refreshes();
    fresh.held_back = deps_.metrics->unconfirmed_answers();
    fresh.oldest_served_age_s = deps_.metrics->oldest_served_age(facts.now);
  }
  const StatusSources& sources = deps_.status;
  if (sources.next_refresh) fresh.next_refresh = sources.next_refresh();
  if (sources.last_prefetch) fresh.last_prefetch = sources.last_prefetch();
  if (sources.prefetching) fresh.prefetching = sources.prefetching();
  auto [pending, listed] = co_await deps_.store.holds(kListedHolds);
  fresh.pending_total = pending;
  fresh.pending = std::move(listed);
  facts.started_at = sources.started_at;
  facts.redis = sources.redis;
  facts.redis_up = sources.redis_up && sources.redis_up();
  facts.circuit = sources.circuit ? std::string(sources.circuit()) : "closed";
  if (sources.worker_loads) facts.workers = sources.worker_loads();
  co_return local_json(200, status_json(facts));
}

asio::awaitable<http::Response> AdminHandler::top_widgets(const http::Request& request) {
  std::size_t n = kDefaultTopWidgets;
  if (auto text = query_param(request.target, "n")) {
    const bool digits =
        !text->empty() && text->size() <= 3 &&
        std::all_of(text->begin(), text->end(), [](char c) { return c >= '0' && c <= '9'; });
    n = digits ? std::stoul(*text) : 0;
    if (n < 1 || n > kMaxTopWidgets) co_return bad_request("n must be a number from 1 to 100");
  }
  const auto summaries = co_await deps_.workers.upstream_costs();
  const auto top = serving::merge_top(summaries, serving::UpstreamCost::kDefaultCapacity, n);
  co_return local_json(200, top_widgets_json(top, deps_.status.started_at));
}

asio::awaitable<http::Response> AdminHandler::purge(const http::Request& request, bool everything) {
  const auto soft_param = query_param(request.target, "soft");
  if (soft_param && *soft_param != "0" && *soft_param != "1" && *soft_param != "true" &&
      *soft_param != "false") {
    co_return bad_request("soft is 1 (made stale and refreshed while served) or 0 (removed)");
  }
  // Soft: nothing is removed; the copies become stale fleet-wide (a stamp in Redis, announced)
  // and each is refreshed once while it is served (docs/freshness.md). Without Redis there is
  // no fleet to tell and no copy to keep serving stale, so nothing is done. Hard: the copies
  // go (a generation in Redis, announced), this instance's L1 whatever Redis says.
  const bool soft = soft_param && (*soft_param == "1" || *soft_param == "true");
  std::optional<std::string> widget;
  if (!everything) {
    widget = query_param(request.target, "widget");
    if (!widget || widget->empty()) co_return bad_request("purge needs one widget parameter");
  }
  const WallTime now = deps_.clock.wall_now();
  std::error_code ec;
  // An if-chain, not conditionals: GCC 12 miscompiles a conditional choosing which awaitable
  // to co_await (docs/ci.md).
  if (everything && soft) {
    ec = co_await deps_.store.soft_purge_all(now);
  } else if (everything) {
    ec = co_await deps_.store.purge_all();
  } else if (soft) {
    ec = co_await deps_.store.soft_purge_widget(*widget, now);
  } else {
    ec = co_await deps_.store.purge_widget(*widget);
  }
  const std::string prefix = widget ? api::widget_key_prefix(*widget) : std::string();
  if (!soft || !ec) co_await deps_.workers.erase_from_l1(prefix);

  const std::string scope = widget ? *widget : "all";  // what the events name
  if (ec) {
    // The events as they were before soft purges came: a hard purge's carry no "soft".
    if (soft) {
      log::warn("purge_failed", {{"widget", scope},
                                 {"soft", true},
                                 {"error", ec.message()},
                                 {"effect", "nothing purged: every copy stays as it was"}});
    } else {
      log::warn("purge_failed", {{"widget", scope},
                                 {"error", ec.message()},
                                 {"effect",
                                  "this instance's L1 only; Redis and the other "
                                  "instances keep their copies until a purge succeeds"}});
    }
    co_return local_json(503,
                         std::string("{\"error\":{\"status\":503,\"code\":\"service_unavailable\","
                                     "\"message\":\"redis is unavailable: ") +
                             (soft ? "nothing was purged" : "purged this instance only") + "\"}}");
  }
  if (soft) {
    log::info("purged", {{"widget", scope}, {"soft", true}});
  } else {
    log::info("purged", {{"widget", scope}});
  }
  std::string body = "{\"purged\":";
  if (widget) {
    json::append_string(body, *widget);
  } else {
    body += "\"all\"";
  }
  body += soft ? ",\"soft\":true}" : "}";
  co_return local_json(200, std::move(body));
}

asio::awaitable<http::Response> AdminHandler::warm(const http::Request& request) {
  simdjson::dom::parser parser;
  simdjson::padded_string json(request.body);
  simdjson::dom::array ids;
  if (parser.parse(json).get_array().get(ids) != simdjson::SUCCESS) {
    co_return bad_request("warm takes a JSON array of widget ids");
  }
  if (ids.size() > kMaxWarmWidgets) {
    co_return bad_request("warm takes at most 100 widget ids per call");
  }
  std::vector<std::string> widgets;
  for (simdjson::dom::element id : ids) {
    std::string_view text;
    if (id.get_string().get(text) != simdjson::SUCCESS) {
      co_return bad_request("warm takes a JSON array of widget ids");
    }
    widgets.emplace_back(text);
  }

  std::string body = "{\"warmed\":[";
  bool first = true;
  for (const std::string& id : widgets) {
    if (!first) body.push_back(',');
    first = false;
    body += "{\"id\":";
    json::append_string(body, id);
    // The same widget policy as the public listener: a refused id is reported, never fetched.
    if (deps_.widget_allowed && !deps_.widget_allowed(id)) {
      body += ",\"widget\":\"widget_not_found\",\"reviews\":\"widget_not_found\"}";
      continue;
    }
    api::ApiRequest widget_request{api::Endpoint::widget, id, {}};
    api::ApiRequest reviews_request{api::Endpoint::reviews, id, {300, 0, std::nullopt}};
    Served widget = co_await deps_.workers.serve(widget_request);
    Served reviews = co_await deps_.workers.serve(reviews_request);
    auto outcome = [](const Served& served) -> std::string {
      if (!served.ok()) return std::string(api::error_info(served.error).code);
      if (served.entry->status != 200) return "widget_not_found";
      return served.outcome.source == Outcome::Source::cache ? "cached" : "fetched";
    };
    body += ",\"widget\":\"" + outcome(widget) + "\",\"reviews\":\"" + outcome(reviews) + "\"}";
    // A warm-up is no client's request and has no access-log line: the event says what it cost.
    const int calls = (widget.upstream_ms >= 0) + (reviews.upstream_ms >= 0);
    log::info("warmed", {{"widget", id},
                         {"widget_data", outcome(widget)},
                         {"reviews", outcome(reviews)},
                         {"upstream_calls", calls},
                         {"upstream_ms",
                          std::max(0.0, widget.upstream_ms) + std::max(0.0, reviews.upstream_ms)}});
  }
  body += "]}";
  co_return local_json(200, std::move(body));
}

asio::awaitable<http::Response> AdminHandler::entry(const http::Request& request) {
  const auto q = request.target.find('?');
  auto asked = entry_request(q == std::string_view::npos ? std::string_view()
                                                         : request.target.substr(q + 1));
  if (auto* rejection = std::get_if<api::Rejection>(&asked)) {
    // The query of a reviews page, checked as the public listener checks it.
    co_return error_response(rejection->code, api::Endpoint::reviews, rejection->message);
  }
  const api::ApiRequest& api_request = std::get<api::ApiRequest>(asked);
  // As the serving core decides it: with derivation on, a page that is not itself a window is
  // cut from windows and kept in L1 only, so Redis holds its windows, never the page.
  const bool derived = api_request.endpoint == api::Endpoint::reviews &&
                       derive_pages_.load(std::memory_order_relaxed) &&
                       !cache::is_window(api_request.query);
  // Locals that live across the awaits below are declared first (GCC 12 coroutines).
  KeyLook page{api::cache_key(api_request), std::nullopt, nullptr, nullptr, {}};
  std::vector<WindowLook> windows;
  page.l1 = co_await deps_.workers.find_in_l1(page.key);
  if (!derived) {
    co_await look_in_redis(page);
  } else {
    for (std::uint64_t start :
         cache::windows_for(api_request.query.skip, api_request.query.limit)) {
      WindowLook window{start, cache::kWindowSize, {}};
      window.look.key = api::cache_key(cache::window_request(api_request, start));
      windows.push_back(std::move(window));
    }
    for (WindowLook& window : windows) {
      window.look.l1 = co_await deps_.workers.find_in_l1(window.look.key);
      co_await look_in_redis(window.look);
    }
  }
  const WallTime now = deps_.clock.wall_now();
  co_return local_json(200, entry_report(page, derived, windows, now));
}

asio::awaitable<void> AdminHandler::look_in_redis(KeyLook& look) {
  cache::Lookup shared = co_await deps_.store.get(look.key);
  look.redis_key = std::move(shared.physical_key);
  look.l2 = std::move(shared.entry);
  look.l2_error = shared.ec;
}

}  // namespace wg::frontend
