#pragma once
// The admin listener (loopback by default): /metrics, /healthz and /readyz without a token;
// /admin/* only with `Authorization: Bearer <admin.token>`, and 404 when no token is
// configured:
//   GET  /admin/quota                      month, used, limit, remaining (limit - used - leased;
//                                          null without a limit), leased, own_lease,
//                                          unknown_used, unknown_limit, resets_at, mode,
//                                          projected_month_end (README, "Admin API")
//   POST /admin/purge?widget=ID[&soft=1]   every key of one widget, on every instance (soft:
//                                          made stale and refreshed while served)
//   POST /admin/purge-all[?soft=1]         everything, on every instance
//   POST /admin/warm                       body: JSON array of widget ids; fetches widget data
//                                          and the first reviews window of each (quota applies)
//   GET  /admin/entry?widget=ID[&limit=&skip=|page=&type=]   where and how long one key is
//                                          cached; a page cut from windows, with its windows
//   GET  /admin/config                     the running configuration as TOML, secrets redacted
//   GET  /admin/status                     what the status page shows: traffic, answers by
//                                          freshness, upstream calls today, the month's
//                                          burn-down, keys pending confirmation, Redis, circuit,
//                                          workers
//   GET  /admin/top-widgets?n=10           the widgets that cost the most upstream requests
//   GET  /admin/ui                         the status page (no token needed: it holds no data,
//                                          its script sends the token to the JSON endpoints)

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "entry_report.hpp"
#include "frontend/response_builder.hpp"
#include "readiness.hpp"
#include "serving/gateway_service.hpp"
#include "serving/upstream_cost.hpp"
#include "status_report.hpp"
#include "traffic_window.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/http/request_handler.hpp"
#include "widget_gateway/quota/burn_history.hpp"

namespace wg::metrics {
class Registry;
class GatewayMetrics;
}  // namespace wg::metrics
namespace wg::quota {
class QuotaCounter;
}
namespace wg::cache {
class RedisStore;
}

namespace wg::frontend {

// What the admin listener (on the control thread) asks of the io workers, which own the
// serving objects: each call runs on the workers' threads and completes back on the caller's.
class Workers {
 public:
  virtual ~Workers() = default;
  // Serves one request as the public listener would (on one of the workers).
  virtual boost::asio::awaitable<Served> serve(const api::ApiRequest& request) = 0;
  // A copy of the entry of `key` in the first worker's L1 that holds one; null when none does.
  virtual boost::asio::awaitable<std::shared_ptr<const cache::Entry>> find_in_l1(
      std::string key) = 0;
  // Erases every L1 key starting with `prefix` (everything for ""), on every worker; completes
  // when all have.
  virtual boost::asio::awaitable<void> erase_from_l1(std::string prefix) = 0;
  // A copy of each worker's upstream cost summary, taken on its own thread.
  virtual boost::asio::awaitable<std::vector<std::vector<serving::WidgetCost>>>
  upstream_costs() = 0;
};

// What /admin/status reads from other components besides the quota. Any thread.
struct StatusSources {
  std::function<std::vector<WorkerLoad>()> worker_loads;
  std::function<bool()> redis_up;             // every connection up and usable, as /readyz says
  std::function<std::string_view()> circuit;  // "closed", "open" or "half_open"
  std::function<WallTime()> next_refresh;     // refresh_at + refresh_lag, next
  // The last prefetch this instance led, and whether one runs (control thread).
  std::function<std::optional<prefetch::PrefetchReport>()> last_prefetch;
  std::function<bool()> prefetching;
  RedisTopology redis;
  WallTime started_at;
};

struct AdminDependencies {
  const Readiness& readiness;
  const metrics::Registry& registry;
  const quota::QuotaCounter& quota;
  Workers& workers;
  cache::RedisStore& store;  // on a Redis connection of the control thread
  Clock& clock;
  std::function<bool(std::string_view)> widget_allowed;  // the public listener's widget policy
  const metrics::GatewayMetrics* metrics = nullptr;      // traffic for /admin/status
  StatusSources status;
};

class AdminHandler final : public http::RequestHandler {
 public:
  // Widgets one warm call may name: it runs while the admin client waits.
  static constexpr std::size_t kMaxWarmWidgets = 100;

  AdminHandler(AdminDependencies deps, std::string token);

  // On the listener's executor (http::Task); the routes' work, which awaits the serving core and
  // Redis, runs in a coroutine of their type (answer).
  http::Task<http::Response> handle(const http::Request& request) override;
  // What the sessions refuse, as JSON errors that name no API endpoint.
  http::Response refuse(http::Refusal why) override;
  void set_token(std::string token);
  // The configuration the process runs with: what /admin/config shows, and whether
  // /admin/entry reports a reviews page as cut from windows (cache.derive_pages). Any thread.
  void show_config(const config::Config& running);
  // On the control thread, about once a second: the readings the status page's history and
  // rates are made of.
  void sample();

 private:
  boost::asio::awaitable<http::Response> answer(const http::Request& request);
  boost::asio::awaitable<http::Response> admin(const http::Request& request, std::string_view path);
  http::Response quota_status() const;
  boost::asio::awaitable<http::Response> purge(const http::Request& request, bool everything);
  boost::asio::awaitable<http::Response> warm(const http::Request& request);
  boost::asio::awaitable<http::Response> entry(const http::Request& request);
  // Fills `look`'s Redis part: where the key lives there and what it holds.
  boost::asio::awaitable<void> look_in_redis(KeyLook& look);
  boost::asio::awaitable<http::Response> status();
  boost::asio::awaitable<http::Response> top_widgets(const http::Request& request);

  AdminDependencies deps_;
  std::atomic<std::shared_ptr<const std::string>> token_;
  std::atomic<std::shared_ptr<const std::string>> config_toml_;  // redacted already
  std::atomic<bool> derive_pages_{true};  // cache.derive_pages, as the workers run it
  // The status page's memory: control thread only (sample() and the handlers run there).
  quota::BurnHistory burn_;
  TrafficWindow traffic_;
};

// Compares a presented bearer token with the configured one in time independent of where
// they differ.
bool token_matches(std::string_view presented, std::string_view expected);

}  // namespace wg::frontend
