#include "widget_gateway/process/process.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <csignal>

#include "frontend/admin_handler.hpp"
#include "prefetch/prefetch_leader.hpp"
#include "process/control_plane.hpp"
#include "process/fleet_guards.hpp"
#include "process/fleet_links.hpp"
#include "process/observability.hpp"
#include "process/reload.hpp"
#include "process/worker_pool.hpp"
#include "widget_gateway/api/widget_policy.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/http/tls_server_context.hpp"

namespace wg::process {
namespace asio = boost::asio;

namespace {

constexpr std::chrono::seconds kQuotaReportEvery{1};
constexpr std::chrono::seconds kStatusSampleEvery{1};
// The workers' demand goes to Redis, and a due prefetch is looked for, this often.
constexpr std::chrono::seconds kPrefetchTickEvery{5};

unsigned thread_count(const config::Config& config) {
  if (config.server.threads > 0) return config.server.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string address_text(const asio::ip::tcp::endpoint& endpoint) {
  auto address = endpoint.address();
  std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

asio::ip::tcp::endpoint listen_endpoint(const config::HostPort& where) {
  std::string host = where.host;
  if (host == "localhost") host = "127.0.0.1";
  if (host == "*") host = "0.0.0.0";
  return {asio::ip::make_address(host), where.port};
}

redis::Settings with_fleet_clock(redis::Settings settings, FleetClock& clock) {
  settings.fleet_clock = &clock;
  return settings;
}

std::shared_ptr<http::TlsServerContext> make_tls(const config::ServerConfig& server) {
  if (server.tls_cert_file.empty()) return nullptr;
  return std::make_shared<http::TlsServerContext>(server.tls_cert_file, server.tls_key_file);
}

// TLS on the admin listener (null: plain), read at start; the files take a restart.
std::shared_ptr<http::TlsServerContext> make_admin_tls(const config::AdminConfig& admin) {
  if (admin.tls_cert_file.empty()) return nullptr;
  return std::make_shared<http::TlsServerContext>(admin.tls_cert_file, admin.tls_key_file, "admin");
}

// The running gateway: a thin owner of its parts, in construction order (destroyed in
// reverse), and the wiring between them (docs/threading.md):
//  - the worker pool: the io workers, each with its own io_context, public socket and serving
//    objects;
//  - the fleet's links (the control thread's Redis connection, purge and stored channels,
//    sentinel watcher) and guards (quota, circuit breaker, upstream's hold, known widgets);
//  - observability (metrics, access log, traces) and /readyz;
//  - the admin listener and the control plane (signals, reload, drain), on the control thread,
//    the one calling run().
class Process final {
 public:
  Process(const config::Invocation& invocation, Clock& clock, RandomSource& random)
      : invocation_(invocation),
        clock_(clock),
        fleet_clock_(clock),
        config_(invocation.config),
        loaded_(invocation.config),
        threads_(thread_count(config_)),
        keys_(config_.redis.key_prefix),
        redis_settings_(with_fleet_clock(serving::redis_settings(config_), fleet_clock_)),
        tls_(make_tls(config_.server)),
        links_(control_.get_executor(), redis_settings_, keys_, pool_),
        guards_(fleet_clock_, config_, keys_, random,
                [this](bool open) {
                  readiness_.set_circuit_open(open);
                  observability_.metrics().circuit_state(open);
                }),
        list_ends_(links_.generations()),
        observability_(clock_, config_, random, scrape_sources()),
        prefetch_({control_.get_executor(), links_.redis(), keys_, fleet_clock_, guards_.quota(),
                   pool_, guards_.quota().instance(), &observability_.metrics()},
                  config_),
        readiness_([this] { return redis_usable(); }, [this] { return pool_.copies_in_l1(); },
                   guards_.quota(), [this] { return guards_.hold_left(); }),
        widget_policy_(std::make_shared<const api::WidgetPolicy>(config_.access.widget_pattern,
                                                                 config_.access.widgets)),
        admin_handler_({readiness_, observability_.registry(), guards_.quota(), pool_,
                        links_.store(), fleet_clock_,
                        [this](std::string_view id) { return widget_policy_.load()->allows(id); },
                        &observability_.metrics(), status_sources()},
                       config_.admin.token),
        admin_server_(control_, "admin", config_.server, admin_handler_, clock_),
        control_plane_(control_, {[this] { reload(); }, [this](int) { drain(); }}) {
    admin_handler_.show_config(config_);
    admin_server_.set_tls(make_admin_tls(config_.admin));
    admin_server_.set_max_body_bytes(64 * 1024);
    guards_.restore_lease();
    links_.redis().on_error(
        [this](redis::ErrorKind kind) { observability_.metrics().redis_error(kind); });
    links_.redis().on_round_trip([this](auto queued, auto answered) {
      observability_.metrics().redis_round_trip(queued, answered);
    });
    pool_.spawn({threads_, config_, redis_settings_,
                 serving::ProcessParts{fleet_clock_, random, links_.generations(), guards_.quota(),
                                       guards_.breaker(), guards_.hold(), guards_.known_widgets(),
                                       &observability_.metrics(), nullptr, threads_, &list_ends_},
                 readiness_, limiters_.for_config(config_), &observability_.access_log(), tls_});
    pool_.on_redis_state_change([this] { observability_.redis_state(pool_.redis_up()); });
    pool_.register_metrics(observability_.registry());
    observability_.start_tracing(
        control_.get_executor(), config_.tracing, pool_.span_queues(),
        [this] { return pool_.spans_dropped(); },
        [this] { return pool_.forced_samples_declined(); });
  }

  int run() {
    const auto public_endpoint = pool_.bind(listen_endpoint(config_.server.listen));
    const auto admin_endpoint = admin_server_.bind(config_.admin.listen);
    links_.start();
    admin_server_.start();
    pool_.start();
    asio::co_spawn(control_, report_quota(), asio::detached);
    asio::co_spawn(control_, sample_status(), asio::detached);
    asio::co_spawn(control_, tick_prefetch(), asio::detached);
    log::info("listening", {{"listener", "public"}, {"address", address_text(public_endpoint)}});
    log::info("listening", {{"listener", "admin"},
                            {"address", address_text(admin_endpoint)},
                            {"tls", !config_.admin.tls_cert_file.empty()}});
    log::info("started", {{"version", WG_VERSION},
                          {"threads", threads_},
                          {"upstream", config_.upstream.base_url},
                          {"redis", config_.redis.url}});
    control_plane_.run();  // until the drain ends; a reload still running ends first
    pool_.join();
    log::info("stopped");
    return 0;
  }

 private:
  // SIGTERM/SIGINT, on the control thread.
  void drain() {
    readiness_.set_draining();
    asio::co_spawn(control_, shutdown(), asio::detached);
  }

  asio::awaitable<void> shutdown() {
    prefetch_.stop();
    co_await pool_.drain(config_.server.drain_timeout);
    co_await admin_server_.drain(std::chrono::milliseconds(100));
    co_await observability_.stop_tracing();  // the last requests' spans
    stopping_ = true;
    co_await guards_.settle(links_.redis());
    links_.stop();
    control_.stop();
  }

  // `step` (a coroutine) once every `period` on the control thread, until the drain.
  template <class Step>
  asio::awaitable<void> every(std::chrono::seconds period, Step step) {
    asio::steady_timer tick(control_);
    while (!stopping_) {
      tick.expires_after(period);
      co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
      if (stopping_) break;
      co_await step();
    }
  }

  // The quota's spending reaches Redis about once a second (and its leases go back when idle),
  // and so do the widgets upstream confirmed since.
  asio::awaitable<void> report_quota() {
    // (The lambda made before the co_await: GCC 12, docs/ci.md.)
    auto report = [this] { return guards_.report_once(links_.redis()); };
    co_await every(kQuotaReportEvery, report);
  }

  // Demand to Redis, and the prefetch after each daily refresh (docs/prefetch.md).
  asio::awaitable<void> tick_prefetch() {
    auto tick = [this] { return prefetch_.tick(); };
    co_await every(kPrefetchTickEvery, tick);
  }

  // The status page's history and rates (/admin/status) are read once a second, on their own
  // timer: a slow quota report must not leave gaps in them.
  asio::awaitable<void> sample_status() {
    asio::steady_timer tick(control_);
    while (!stopping_) {
      admin_handler_.sample();
      tick.expires_after(kStatusSampleEvery);
      co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }

  // On the reload thread: reads the file and applies it.
  void reload() {
    config::BuiltConfig built;
    try {
      built = config::build_config(invocation_.sources);
    } catch (const std::exception& e) {
      observability_.config_reload(false);
      log::error("reload_rejected", {{"error", e.what()}});
      return;
    }
    apply(built);
  }

  // Reloadable: [cache] (TTL policy, stale windows, derivation, L1 size), [quota], [cors],
  // [access], admin.token, log.level, log.sample (and a reopen of a log.access_log file). The
  // rest keeps its start-up value until a restart (running_after_reload). Workers apply their
  // part on their own threads. On the reload thread.
  void apply(const config::BuiltConfig& built) {
    const config::Config& fresh = built.config;
    const config::Config running = running_after_reload(config_, fresh, reload_tls(fresh.server));
    log::set_level(running.log.level);
    observability_.apply(running.log);
    pool_.apply(running, limiters_.for_config(running));
    cache_config_.store(std::make_shared<const config::CacheConfig>(running.cache));
    widget_policy_.store(std::make_shared<const api::WidgetPolicy>(running.access.widget_pattern,
                                                                   running.access.widgets));
    guards_.apply(running.quota);
    asio::post(control_, [this, running] { prefetch_.apply(running); });
    admin_handler_.set_token(running.admin.token);
    admin_handler_.show_config(running);
    observability_.config_reload(true);
    log_reload(built, running);
  }

  // The certificate and key are read again on every reload (certificates are renewed under
  // the same names): new connections get them, open ones keep theirs. Turning TLS on or off
  // takes a restart. Returns whether the files were read.
  bool reload_tls(const config::ServerConfig& fresh) {
    if (!tls_ || fresh.tls_cert_file.empty()) return false;
    try {
      tls_->reload(fresh.tls_cert_file, fresh.tls_key_file);
      log::info("tls_reloaded", {{"cert_file", fresh.tls_cert_file}});
      return true;
    } catch (const std::exception& e) {
      log::error("tls_reload_rejected", {{"error", e.what()}});
      return false;
    }
  }

  // Names the keys the reload changed (since the last accepted file), those waiting for a
  // restart, and those of the file a flag or WG_* variable overrides: editing them does nothing,
  // which an operator must hear about (warn).
  void log_reload(const config::BuiltConfig& built, const config::Config& running) {
    const config::Config& fresh = built.config;
    const std::vector<std::string> restart = config::changed_keys(running, fresh);
    if (!restart.empty()) log::warn("reload_needs_restart", {{"keys", restart}});
    const std::vector<std::string> changed = config::changed_keys(loaded_, fresh);
    loaded_ = fresh;
    if (built.overridden.empty()) {
      log::info("reloaded", {{"file", fresh.config_file}, {"changed", changed}});
    } else {
      log::warn("reloaded",
                {{"file", fresh.config_file}, {"changed", changed}, {"ignored", built.overridden}});
    }
  }

  // /readyz's "redis": every connection up and none getting error replies. Any thread.
  bool redis_usable() const {
    return frontend::redis_usable(links_.redis()) && pool_.redis_usable();
  }

  // The next daily refresh (refresh_at + refresh_lag) under the running settings. Any thread.
  WallTime next_refresh() const {
    const auto cache = cache_config_.load();
    return cache::next_refresh_boundary(fleet_clock_.wall_now(), cache->refresh_at,
                                        cache->utc_offset, cache->refresh_lag);
  }

  // What /metrics reads at scrape (the parts named are built before the first scrape).
  metrics::ScrapeSources scrape_sources() {
    metrics::ScrapeSources sources;
    guards_.describe(sources);
    pool_.describe(sources);
    sources.ready = [this] { return readiness_.answer().status == 200; };
    sources.degraded = [this] {
      return readiness_.answer().state == frontend::ReadyState::degraded;
    };
    sources.wall_now = [this] { return fleet_clock_.wall_now(); };
    sources.clock_skew = [this] {
      return std::chrono::duration<double>(fleet_clock_.offset()).count();
    };
    sources.next_refresh = [this] { return unix_seconds(next_refresh()); };
    // At scrape, on the control thread, where the leader lives.
    sources.refresh_unchanged_ratio = [this] {
      const auto last = prefetch_.last();
      return last ? last->unchanged_share.value_or(0.0) : 0.0;
    };
    sources.refresh_unchanged_baseline_ratio = [this] {
      const auto last = prefetch_.last();
      return last ? last->baseline_share.value_or(0.0) : 0.0;
    };
    sources.refresh_unchanged_baseline_days = [this] {
      const auto last = prefetch_.last();
      return last ? static_cast<double>(last->baseline_days) : 0.0;
    };
    return sources;
  }

  // What /admin/status shows of the parts (read from any thread).
  frontend::StatusSources status_sources() {
    frontend::StatusSources sources;
    sources.started_at = clock_.wall_now();
    sources.redis = frontend::redis_topology(config_.redis.mode, config_.redis.url,
                                             config_.redis.nodes, config_.redis.sentinel_master);
    sources.redis_up = [this] { return redis_usable(); };
    sources.circuit = [this] { return upstream::to_string(guards_.breaker().state()); };
    sources.next_refresh = [this] { return next_refresh(); };
    sources.last_prefetch = [this] { return prefetch_.last(); };
    sources.prefetching = [this] { return prefetch_.leading(); };
    sources.worker_loads = [this] { return pool_.loads(); };
    return sources;
  }

  const config::Invocation& invocation_;
  Clock& clock_;
  // Redis's time, which everything written to Redis or judged against it follows
  // (docs/clocks.md): measured on every Redis connection and once a second by the guards.
  FleetClock fleet_clock_;
  config::Config config_;  // as started: what the parts bound at start run with
  config::Config loaded_;  // the last configuration built (reload thread once running)
  // The running [cache] settings, for the next refresh time /metrics and /admin/status show.
  std::atomic<std::shared_ptr<const config::CacheConfig>> cache_config_{
      std::make_shared<const config::CacheConfig>(config_.cache)};
  unsigned threads_;
  const KeySpace keys_;  // redis.key_prefix: every key and channel
  // Every connection's settings, built once: the password file is read at start only.
  const redis::Settings redis_settings_;
  const std::shared_ptr<http::TlsServerContext> tls_;  // null: the public listener is plain
  asio::io_context control_{1};
  WorkerPool pool_;  // empty until the constructor's body spawns the workers
  FleetLinks links_;
  FleetGuards guards_;
  serving::ListEnds list_ends_;
  Observability observability_;
  prefetch::PrefetchLeader prefetch_;  // control thread
  frontend::Readiness readiness_;
  SharedLimiters limiters_;  // constructor, then the reload thread
  std::atomic<std::shared_ptr<const api::WidgetPolicy>> widget_policy_;  // for the admin
  frontend::AdminHandler admin_handler_;
  http::HttpServer admin_server_;
  bool stopping_ = false;  // control thread only
  ControlPlane control_plane_;
};

}  // namespace

int run_gateway(const config::Invocation& invocation) {
  // A reader of stdout or stderr that goes away (a log shipper restarting) must not end the
  // process: writes then fail with EPIPE, which the access log and the event log survive.
  // Sockets are unaffected (Asio sends with MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  block_stop_signals();  // inherited by every thread started from here on
  log::set_level(invocation.config.log.level);
  warn_ignored_environment(invocation);
  Process process(invocation, SystemClock::instance(), DefaultRandom::instance());
  return process.run();
}

void warn_ignored_environment(const config::Invocation& invocation) {
  // Ignored, as the contract says; but a misspelt name (WG_REDIS_URL for WG_REDIS) would
  // otherwise go unnoticed.
  if (invocation.unknown_environment.empty()) return;
  log::warn("environment_ignored", {{"variables", invocation.unknown_environment},
                                    {"known", config::known_environment()}});
}

}  // namespace wg::process
