#include "widget_gateway/gateway/app.hpp"

#include <unistd.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "frontend/admin_handler.hpp"
#include "frontend/readiness.hpp"
#include "serving/serving_core.hpp"
#include "widget_gateway/accesslog/access_log.hpp"
#include "widget_gateway/api/widget_policy.hpp"
#include "widget_gateway/cache/key_space.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/edge/rate_limiter.hpp"
#include "widget_gateway/http/tls_server_context.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/metrics/process_metrics.hpp"
#include "widget_gateway/metrics/registry.hpp"
#include "widget_gateway/quota/eviction_policy.hpp"
#include "widget_gateway/quota/lease_file.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/redis/sentinel_watcher.hpp"
#include "widget_gateway/redis/subscriber.hpp"
#include "widget_gateway/tracing/otlp_exporter.hpp"
#include "widget_gateway/upstream/circuit_breaker.hpp"
#include "worker.hpp"

namespace wg::gateway {

using frontend::AdminHandler;
using frontend::Workers;
using serving::Served;
using serving::SiblingCaches;
namespace asio = boost::asio;

namespace {

// The circuit's first pause after it opens; each failed probe doubles it up to
// upstream.circuit_open_for. A blip of a few seconds then costs about a second of 502s for
// uncached keys (and of not refreshing stale ones), not a whole circuit_open_for.
constexpr std::chrono::milliseconds kFirstCircuitPause{1000};
constexpr std::chrono::seconds kQuotaReportEvery{1};
constexpr std::chrono::seconds kStatusSampleEvery{1};

// The signals the gateway stops or reloads on. Only the control thread takes them, and only
// while its signal set listens (Gateway::run): every other thread starts with them blocked.
// Before that and after it they stay pending, and a late one (a SIGHUP sent just after
// SIGTERM) ends with the process instead of killing it by its default action, which the
// signal set restores when it goes.
void block_stop_signals(bool blocked) {
  sigset_t signals;
  sigemptyset(&signals);
  for (int signal : {SIGHUP, SIGINT, SIGTERM}) sigaddset(&signals, signal);
  pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &signals, nullptr);
}

unsigned thread_count(const config::Config& config) {
  if (config.server.threads > 0) return config.server.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

double unix_seconds(WallTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
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

// On the worker's thread: drops the L1 keys starting with `prefix`, or everything for "".
void erase_in(serving::ServingCore& core, const std::string& prefix) {
  if (prefix.empty()) {
    core.l1.clear();
  } else {
    core.l1.erase_prefix(prefix);
  }
}

// What the process runs with once a reload built `fresh`: its reloadable parts, and the start-up
// values of what is bound to sockets, pools or threads made at start ([server], [upstream],
// [redis], [tracing], admin.listen, log.access_log), which wait for a restart. TLS certificate
// files are an exception: `tls_files_read` says the reload read them (renewals keep the
// listener); so is server.public_readyz_detail, a setting of the public handler that each
// worker swaps.
config::Config running_after_reload(const config::Config& started, const config::Config& fresh,
                                    bool tls_files_read) {
  config::Config running = fresh;
  running.server = started.server;
  if (tls_files_read) {
    running.server.tls_cert_file = fresh.server.tls_cert_file;
    running.server.tls_key_file = fresh.server.tls_key_file;
  }
  running.server.public_readyz_detail = fresh.server.public_readyz_detail;
  running.upstream = started.upstream;
  running.redis = started.redis;
  running.admin.listen = started.admin.listen;
  running.admin.tls_cert_file = started.admin.tls_cert_file;
  running.admin.tls_key_file = started.admin.tls_key_file;
  running.log.access_log = started.log.access_log;
  running.tracing = started.tracing;
  return running;
}

// One per-client limiter every worker shares; kept across reloads that leave its shape alone,
// so a reload does not refill every client's bucket.
class SharedLimiter {
 public:
  std::shared_ptr<edge::RateLimiter> for_shape(double rate, std::uint32_t burst) {
    const std::pair<double, std::uint32_t> shape{rate, burst};
    if (shape != shape_) {
      limiter_ = rate > 0 ? std::make_shared<edge::RateLimiter>(rate, burst) : nullptr;
      shape_ = shape;
    }
    return limiter_;
  }

 private:
  std::pair<double, std::uint32_t> shape_{0, 0};
  std::shared_ptr<edge::RateLimiter> limiter_;
};

struct SharedLimiters {
  SharedLimiter misses;
  SharedLimiter unknown_ids;
  frontend::ClientLimiters for_config(const config::Config& config) {
    return {misses.for_shape(config.access.per_ip_rate, config.access.per_ip_burst),
            unknown_ids.for_shape(config.access.unknown_per_ip_rate,
                                  config.access.unknown_per_ip_burst)};
  }
};

// This process's name in the quota's lease ledger: the host and a random suffix, so that
// instances on one host, and restarts, never share a ledger by accident.
std::string instance_name(RandomSource& random) {
  char host[256] = "gateway";
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "gateway");
  host[sizeof host - 1] = '\0';
  for (char* c = host; *c; ++c) {
    if (*c == ' ' || *c == ':') *c = '-';
  }
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x",
                static_cast<unsigned>(random.uniform01() * 4294967296.0));
  return std::string(host) + "-" + suffix;
}

// Everything the gateway runs, in construction order (destroyed in reverse).
//
// Threads (docs/threading.md): N io workers, each with its own io_context, public socket and
// serving objects; and the control thread (the one calling run()), which runs the admin
// listener, signals, the purge subscriber, the sentinel watcher (sentinel mode) and a Redis
// connection of its own for admin work. Process-wide state shared by the workers (quota, circuit
// breaker, purge generations, metrics, access log, per-IP limiter, readiness) is thread-safe and
// off the hit path.
class Gateway final : private Workers, private SiblingCaches {
 public:
  explicit Gateway(const config::Invocation& invocation)
      : invocation_(invocation),
        config_(invocation.config),
        loaded_(invocation.config),
        threads_(thread_count(config_)),
        keys_(config_.redis.key_prefix),
        redis_settings_(with_fleet_clock(serving::redis_settings(config_), fleet_clock_)),
        tls_(make_tls(config_.server)),
        control_redis_(control_.get_executor(), redis_settings_),
        store_(control_redis_, generations_, keys_),
        purges_(control_.get_executor(), redis_settings_,
                {keys_.purge_channel(), keys_.stored_channel()},
                [this](std::string_view channel, std::string_view message) {
                  if (channel == keys_.stored_channel()) {
                    this->on_stored(message);
                  } else {
                    this->on_purge(message);
                  }
                }),
        sentinel_watcher_(make_sentinel_watcher()),
        quota_(fleet_clock_, config_.quota, instance_name(DefaultRandom::instance()), keys_),
        breaker_(
            config_.upstream.circuit_failures,
            std::chrono::duration_cast<std::chrono::milliseconds>(
                config_.upstream.circuit_open_for),
            [this](upstream::CircuitBreaker::State, upstream::CircuitBreaker::State to) {
              const bool open = to != upstream::CircuitBreaker::State::closed;
              readiness_.set_circuit_open(open);
              metrics_.circuit_state(open);
              // Opening is news an operator acts on; closing again is the all-clear.
              log::event(open ? log::Level::warn : log::Level::info, "circuit",
                         {{"state", upstream::to_string(to)}});
            },
            kFirstCircuitPause),
        known_widgets_(keys_),
        access_log_(config_.log.access_log, config_.log.sample, DefaultRandom::instance()),
        metrics_(registry_, scrape_sources()),
        readiness_([this] { return redis_usable(); }, [this] { return copies_in_l1(); }, quota_,
                   [this] { return hold_.at(SystemClock::instance().steady_now()).left; }),
        widget_policy_(std::make_shared<const api::WidgetPolicy>(config_.access.widget_pattern,
                                                                 config_.access.widgets)),
        admin_handler_({readiness_, registry_, quota_, *this, store_, fleet_clock_,
                        [this](std::string_view id) { return widget_policy_.load()->allows(id); },
                        &metrics_, status_sources()},
                       config_.admin.token),
        admin_server_(control_, "admin", config_.server, admin_handler_, true),
        signals_(control_, SIGINT, SIGTERM, SIGHUP) {
    const ProcessParts parts{fleet_clock_,
                             DefaultRandom::instance(),
                             generations_,
                             quota_,
                             breaker_,
                             hold_,
                             known_widgets_,
                             &metrics_,
                             threads_ > 1 ? static_cast<SiblingCaches*>(this) : nullptr,
                             threads_,
                             &list_ends_};
    admin_handler_.show_config(config_);
    admin_server_.set_tls(make_admin_tls(config_.admin));
    metrics_.config_loaded(unix_seconds(SystemClock::instance().wall_now()));
    metrics::register_process_metrics(registry_);
    restore_quota_lease();
    control_redis_.on_error(
        [this](redis::ErrorKind kind) { metrics_.redis_error(redis::to_string(kind)); });
    auto limiter = limiter_.for_config(config_);
    for (unsigned i = 0; i < threads_; ++i) {
      workers_.push_back(std::make_unique<Worker>(i, threads_, config_, redis_settings_, parts,
                                                  readiness_, limiter, &access_log_));
      workers_.back()->use_tls(tls_);
    }
    exporter_ = make_exporter();
  }

  int run() {
    // The first worker binds the configured address (port 0 picks one); the others share
    // the port it got.
    auto public_endpoint = listen_endpoint(config_.server.listen);
    for (auto& worker : workers_) public_endpoint = worker->bind(public_endpoint);
    auto admin_endpoint = admin_server_.bind(config_.admin.listen);

    for (auto& worker : workers_) {
      worker->core().redis.on_state_change([this](bool) { redis_state_changed(); });
    }
    metrics_.redis_state(false);
    redis_degraded_.set(true, SystemClock::instance().steady_now());
    registry_.callback_counter(
        "wg_trace_spans_exported_total",
        "Spans the OTLP collector (tracing.otlp_endpoint) accepted.", {},
        [this] { return exporter_ ? static_cast<double>(exporter_->exported()) : 0; });
    registry_.callback_counter(
        "wg_trace_spans_dropped_total",
        "Finished spans not exported: a worker's queue was full, or the collector did not take "
        "their batch.",
        {}, [this] {
          std::uint64_t dropped = exporter_ ? exporter_->failed() : 0;
          for (const auto& worker : workers_) dropped += worker->span_queue().dropped();
          return static_cast<double>(dropped);
        });
    registry_.callback_counter(
        "wg_trace_forced_samples_declined_total",
        "Requests whose traceparent asked for sampling past the per-worker budget of callers "
        "outside access.trusted_proxies: their trace was carried on, not recorded.",
        {}, [this] {
          std::uint64_t declined = 0;
          for (const auto& worker : workers_) declined += worker->forced_samples_declined();
          return static_cast<double>(declined);
        });
    registry_.callback_counter(
        "wg_redis_degraded_seconds_total", "Time spent without a Redis connection.", {},
        [this] { return redis_degraded_.seconds(SystemClock::instance().steady_now()); });
    // How evenly the kernel spreads the load over the workers' sockets.
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const Worker* worker = workers_[i].get();
      registry_.callback_counter(
          "wg_worker_requests_total", "Requests read by each io worker on the public listener.",
          {{"worker", std::to_string(i)}}, [worker] {
            return static_cast<double>(
                worker->server_stats().requests.load(std::memory_order_relaxed));
          });
    }
    // Purges announced while this instance could not hear them are lost: after any reconnect
    // it forgets its L1 and the generations it knew.
    purges_.on_state_change([this](bool up) {
      if (!up) return;
      generations_.clear();
      // Each worker forgets its L1 once its own connection is back too: until then its L1 is
      // all that serves its cached keys (after a failover the subscriber is often back first).
      for (auto& worker : workers_) {
        asio::post(worker->executor(), [&core = worker->core()] { core.clear_l1_when_redis_up(); });
      }
    });
    admin_server_.set_max_body_bytes(64 * 1024);
    control_redis_.start();
    purges_.start();
    if (sentinel_watcher_) sentinel_watcher_->start();
    admin_server_.start();
    if (exporter_) exporter_->start();
    for (auto& worker : workers_) worker->start();
    asio::co_spawn(control_, report_quota(), asio::detached);
    asio::co_spawn(control_, sample_status(), asio::detached);
    log::info("listening", {{"listener", "public"}, {"address", address_text(public_endpoint)}});
    log::info("listening", {{"listener", "admin"},
                            {"address", address_text(admin_endpoint)},
                            {"tls", !config_.admin.tls_cert_file.empty()}});
    log::info("started", {{"version", WG_VERSION},
                          {"threads", threads_},
                          {"upstream", config_.upstream.base_url},
                          {"redis", config_.redis.url}});
    wait_for_signal();

    block_stop_signals(false);
    control_.run();
    block_stop_signals(true);
    end_reloads();     // a reload applies to the workers: it ends before they go
    workers_.clear();  // joins their threads
    log::info("stopped");
    return 0;
  }

 private:
  void wait_for_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (signal == SIGHUP) {
        reload();
        wait_for_signal();
        return;
      }
      log::info("draining", {{"signal", signal}});
      readiness_.set_draining();
      refuse_reloads();
      asio::co_spawn(control_, shutdown(), asio::detached);
    });
  }

  asio::awaitable<void> shutdown() {
    // Every worker drains in parallel; the control thread polls until all have.
    auto left = std::make_shared<std::atomic<std::size_t>>(workers_.size());
    for (auto& worker : workers_) {
      worker->stop(config_.server.drain_timeout, [left] { left->fetch_sub(1); });
    }
    asio::steady_timer tick(control_);
    while (left->load() > 0) {
      tick.expires_after(std::chrono::milliseconds(20));
      co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    co_await admin_server_.drain(std::chrono::milliseconds(100));
    if (exporter_) co_await exporter_->stop();  // the last requests' spans
    stopping_ = true;
    co_await known_widgets_.flush(control_redis_);
    co_await release_quota_lease();
    control_redis_.stop();
    purges_.stop();
    if (sentinel_watcher_) sentinel_watcher_->stop();
    control_.stop();
  }

  // The quota's spending reaches Redis about once a second (and its leases go back when idle),
  // and so do the widgets upstream confirmed since. Until Redis has answered it once, each
  // tick also asks whether its eviction policy could take the quota keys.
  asio::awaitable<void> report_quota() {
    asio::steady_timer tick(control_);
    bool policy_checked = false;
    while (!stopping_) {
      tick.expires_after(kQuotaReportEvery);
      co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
      if (stopping_) break;
      if (!policy_checked) policy_checked = co_await quota::warn_if_quota_evictable(control_redis_);
      co_await redis::observe_time(control_redis_, fleet_clock_);  // the fleet's clock, kept
      co_await quota_.report(control_redis_);
      co_await known_widgets_.flush(control_redis_);
    }
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

  // What /admin/status shows of the parts this class owns (read from any thread).
  frontend::StatusSources status_sources() {
    frontend::StatusSources sources;
    sources.started_at = SystemClock::instance().wall_now();
    sources.redis = frontend::redis_topology(config_.redis.mode, config_.redis.url,
                                             config_.redis.nodes, config_.redis.sentinel_master);
    sources.redis_up = [this] { return redis_usable(); };
    sources.circuit = [this] { return upstream::to_string(breaker_.state()); };
    sources.next_refresh = [this] { return next_refresh(); };
    sources.worker_loads = [this] {
      std::vector<frontend::WorkerLoad> loads;
      for (const auto& worker : workers_) {
        const http::ServerStats& stats = worker->server_stats();
        loads.push_back({stats.requests.load(std::memory_order_relaxed),
                         stats.open.load(std::memory_order_relaxed), worker->l1_entries(),
                         worker->l1_bytes(), worker->redis_usable()});
      }
      return loads;
    };
    return sources;
  }

  // Takes over the ledger a stopped instance left in quota.state_file, if any.
  void restore_quota_lease() {
    if (config_.quota.state_file.empty()) return;
    if (auto state = quota::take_lease_state(config_.quota.state_file)) {
      quota_.restore(*state);
      log::info("quota_lease_restored",
                {{"instance", state->instance}, {"path", config_.quota.state_file}});
    }
  }

  // Gives the unspent lease back, then writes quota.state_file (a small blocking write, after
  // every worker has stopped serving): what Redis could not take, and in any case the fleet's
  // spending as last seen, which the next start sends as its high-water mark.
  asio::awaitable<void> release_quota_lease() {
    const bool settled = co_await quota_.release(control_redis_);
    const quota::LeaseState state = quota_.lease_state();
    const bool saved = !config_.quota.state_file.empty() &&
                       quota::save_lease_state(config_.quota.state_file, state);
    if (settled) {
      if (saved) log::info("quota_state_saved", {{"path", config_.quota.state_file}});
      co_return;
    }
    std::uint64_t unspent = 0;
    for (const auto& [month, ledger] : state.ledgers) unspent += ledger.left();
    const bool unreported = quota_.snapshot().unreported;
    if (saved) {
      log::warn("quota_lease_saved", {{"path", config_.quota.state_file}, {"unspent", unspent}});
    } else {
      // Never over the limit: what is unreported stays counted as leased in Redis.
      log::warn("quota_lease_unreturned",
                {{"instance", state.instance}, {"unspent", unspent}, {"unreported", unreported}});
    }
  }

  static std::shared_ptr<http::TlsServerContext> make_tls(const config::ServerConfig& server) {
    if (server.tls_cert_file.empty()) return nullptr;
    return std::make_shared<http::TlsServerContext>(server.tls_cert_file, server.tls_key_file);
  }

  // TLS on the admin listener (null: plain), read at start; the files take a restart.
  static std::shared_ptr<http::TlsServerContext> make_admin_tls(const config::AdminConfig& admin) {
    if (admin.tls_cert_file.empty()) return nullptr;
    return std::make_shared<http::TlsServerContext>(admin.tls_cert_file, admin.tls_key_file,
                                                    "admin");
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

  // The file is read and applied on a helper thread: no blocking I/O on an io thread. One
  // helper at a time, so reloads apply in order: a SIGHUP while one runs only asks it to read
  // the file once more when done, and the control thread never waits for it. run() joins it
  // before the workers it applies to go; once draining starts no new reload begins.
  void reload() {
    {
      std::lock_guard lock(reload_mutex_);
      if (draining_) return;
      if (reload_running_) {
        reload_again_ = true;
        return;
      }
      reload_running_ = true;
    }
    if (reload_thread_.joinable()) reload_thread_.join();  // finished: it cleared reload_running_
    reload_thread_ = std::jthread([this] {
      block_stop_signals(true);  // started by the control thread, which takes them
      for (;;) {
        reload_once();
        std::lock_guard lock(reload_mutex_);
        if (!reload_again_ || draining_) {
          reload_running_ = false;
          return;
        }
        reload_again_ = false;
      }
    });
  }

  // From the drain on, no reload starts (a pending one is dropped): it would only be applied
  // to workers on their way out.
  void refuse_reloads() {
    std::lock_guard lock(reload_mutex_);
    draining_ = true;
  }

  // Waits for the reload still running, if any; none starts after this.
  void end_reloads() {
    refuse_reloads();
    if (reload_thread_.joinable()) reload_thread_.join();
  }

  void reload_once() {
    config::BuiltConfig built;
    try {
      built = config::build_config(invocation_.sources);
    } catch (const std::exception& e) {
      metrics_.config_reload(false, unix_seconds(SystemClock::instance().wall_now()));
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
    access_log_.set_sample(running.log.sample);
    access_log_.reopen();
    auto limiter = limiter_.for_config(running);
    for (auto& worker : workers_) worker->apply(running, limiter);
    cache_config_.store(std::make_shared<const config::CacheConfig>(running.cache));
    widget_policy_.store(std::make_shared<const api::WidgetPolicy>(running.access.widget_pattern,
                                                                   running.access.widgets));
    const quota::Mode mode_before = quota_.snapshot().mode;
    quota_.set_config(running.quota);
    const quota::Mode mode_after = quota_.snapshot().mode;
    if (mode_after != mode_before) {
      log::warn("quota_mode", {{"mode", quota::to_string(mode_after)}, {"cause", "reload"}});
    }
    admin_handler_.set_token(running.admin.token);
    admin_handler_.show_config(running);
    metrics_.config_reload(true, unix_seconds(SystemClock::instance().wall_now()));
    log_reload(built, running);
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

  // With tracing.otlp_endpoint: one exporter, on the control thread, draining every worker's
  // span queue (docs/tracing.md).
  std::unique_ptr<tracing::OtlpExporter> make_exporter() {
    const config::TracingConfig& wanted = config_.tracing;
    if (wanted.otlp_endpoint.empty()) return nullptr;
    tracing::ExporterSettings settings;
    if (!tracing::split_endpoint(wanted.otlp_endpoint, settings)) {
      throw std::invalid_argument("tracing.otlp_endpoint: not an http:// URL");
    }
    settings.service_name = wanted.service_name;
    settings.service_version = WG_VERSION;
    settings.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(wanted.export_timeout);
    std::vector<tracing::SpanQueue*> queues;
    for (auto& worker : workers_) queues.push_back(&worker->span_queue());
    return std::make_unique<tracing::OtlpExporter>(control_.get_executor(), std::move(settings),
                                                   std::move(queues));
  }

  // Sentinel mode: one watcher for the process, on the control thread.
  std::unique_ptr<redis::SentinelWatcher> make_sentinel_watcher() {
    if (!redis_settings_.sentinel) return nullptr;
    return std::make_unique<redis::SentinelWatcher>(
        control_.get_executor(), redis_settings_,
        [this](const redis::PrimarySwitch& to) { use_redis_primary(to.to_host, to.to_port); });
  }

  // On the control thread (the watcher's): every Redis connection of the process follows the
  // announced primary, each on its own thread.
  void use_redis_primary(const std::string& host, std::uint16_t port) {
    control_redis_.use_primary(host, port);
    purges_.use_primary(host, port);
    for (auto& worker : workers_) worker->use_redis_primary(host, port);
  }

  // On the control thread (the subscriber's).
  void on_purge(std::string_view message) {
    auto prefix = store_.apply_purge_message(message);
    if (!prefix) {
      log::warn("purge_message_malformed", {{"message", message}});
      return;
    }
    erase_everywhere(*prefix);
  }

  // On the control thread: a copy was stored ("<stored_at ms> <fresh_until ms> <key>",
  // docs/freshness.md). Every worker drops an older copy of it, so none answers the older one
  // after this; malformed messages are dropped (they come from a newer version or a bug).
  void on_stored(std::string_view message) {
    const auto first = message.find(' ');
    const auto second = first == std::string_view::npos ? first : message.find(' ', first + 1);
    if (second == std::string_view::npos) return;
    long long stored_ms = 0;
    long long fresh_ms = 0;
    const auto parse = [](std::string_view text, long long& value) {
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      return ec == std::errc{} && end == text.data() + text.size();
    };
    if (!parse(message.substr(0, first), stored_ms) ||
        !parse(message.substr(first + 1, second - first - 1), fresh_ms)) {
      return;
    }
    const WallTime stored_at{std::chrono::milliseconds(stored_ms)};
    const WallTime fresh_until{std::chrono::milliseconds(fresh_ms)};
    std::string key(message.substr(second + 1));
    for (auto& worker : workers_) {
      asio::post(worker->executor(), [&core = worker->core(), key, stored_at, fresh_until] {
        core.drop_older(key, stored_at, fresh_until);
      });
    }
  }

  // Posts the erasure to every worker; "" clears.
  void erase_everywhere(const std::string& prefix) {
    for (auto& worker : workers_) {
      asio::post(worker->executor(), [&core = worker->core(), prefix] { erase_in(core, prefix); });
    }
  }

  // Workers, for the admin listener.
  asio::awaitable<Served> serve(const api::ApiRequest& request) override {
    Worker& worker = *workers_[next_worker_++ % workers_.size()];
    auto on_worker = [&worker, request]() -> asio::awaitable<Served> {
      co_return co_await worker.core().service.serve(request);
    };
    co_return co_await asio::co_spawn(worker.executor(), on_worker, asio::use_awaitable);
  }

  // Admin's view of a key in L1: a copy, so the control thread shares no memory with a worker
  // (whose entry may still gain a compressed variant).
  asio::awaitable<std::shared_ptr<const cache::Entry>> find_in_l1(std::string key) override {
    co_return co_await copy_from_l1(std::move(key), workers_.size());
  }

  // SiblingCaches, for the workers (while Redis is down).
  asio::awaitable<std::shared_ptr<const cache::Entry>> find_copy(std::string key,
                                                                 unsigned asking) override {
    co_return co_await copy_from_l1(std::move(key), asking);
  }

  // A copy, made on its owner's thread, of the first worker's L1 entry for `key` (worker `skip`
  // not asked); null when none holds one.
  asio::awaitable<std::shared_ptr<const cache::Entry>> copy_from_l1(std::string key,
                                                                    std::size_t skip) {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      if (i == skip) continue;
      auto on_worker = [&core = workers_[i]->core(),
                        key]() -> asio::awaitable<std::shared_ptr<const cache::Entry>> {
        std::shared_ptr<const cache::Entry> copy;
        if (auto entry = core.l1.get(key)) copy = std::make_shared<const cache::Entry>(*entry);
        co_return copy;
      };
      auto copy = co_await asio::co_spawn(workers_[i]->executor(), on_worker, asio::use_awaitable);
      if (copy) co_return copy;
    }
    co_return nullptr;
  }

  // Each worker's summary, copied on its own thread (the fetcher writes it there).
  asio::awaitable<std::vector<std::vector<serving::WidgetCost>>> upstream_costs() override {
    std::vector<std::vector<serving::WidgetCost>> summaries;
    for (auto& worker : workers_) {
      auto on_worker = [&core =
                            worker->core()]() -> asio::awaitable<std::vector<serving::WidgetCost>> {
        co_return core.cost.top();
      };
      auto summary = co_await asio::co_spawn(worker->executor(), on_worker, asio::use_awaitable);
      summaries.push_back(std::move(summary));
    }
    co_return summaries;
  }

  asio::awaitable<void> erase_from_l1(std::string prefix) override {
    for (auto& worker : workers_) {
      auto on_worker = [&core = worker->core(), prefix]() -> asio::awaitable<void> {
        erase_in(core, prefix);
        co_return;
      };
      co_await asio::co_spawn(worker->executor(), on_worker, asio::use_awaitable);
    }
  }

  // /readyz's "redis": every connection up and none getting error replies. Any thread.
  bool redis_usable() const {
    if (!frontend::redis_usable(control_redis_)) return false;
    for (const auto& worker : workers_) {
      if (!worker->redis_usable()) return false;
    }
    return !workers_.empty();
  }

  // The next daily refresh (refresh_at + refresh_lag) under the running settings. Any thread.
  WallTime next_refresh() const {
    const auto cache = cache_config_.load();
    return cache::next_refresh_boundary(fleet_clock_.wall_now(), cache->refresh_at,
                                        cache->utc_offset, cache->refresh_lag);
  }

  // /readyz: whether any worker's L1 holds an entry. Any thread.
  bool copies_in_l1() const {
    for (const auto& worker : workers_) {
      if (worker->l1_entries() > 0) return true;
    }
    return false;
  }

  // wg_redis_up: every worker's connection is up. Any thread.
  bool redis_up() const {
    for (const auto& worker : workers_) {
      if (!worker->redis_connected()) return false;
    }
    return !workers_.empty();
  }

  // On the strand of the connection that changed.
  void redis_state_changed() {
    const bool up = redis_up();
    metrics_.redis_state(up);
    redis_degraded_.set(!up, SystemClock::instance().steady_now());
  }

  metrics::ScrapeSources scrape_sources() {
    metrics::ScrapeSources sources;
    sources.quota_used = [this] { return static_cast<double>(quota_.snapshot().used); };
    sources.quota_limit = [this] { return static_cast<double>(quota_.snapshot().limit); };
    // With no limit nothing runs out: +Inf, as /admin/quota's null, never a 0 that looks spent.
    sources.quota_remaining = [this] {
      const auto remaining = quota_.snapshot().remaining();
      return remaining ? static_cast<double>(*remaining) : std::numeric_limits<double>::infinity();
    };
    sources.quota_leased = [this] { return static_cast<double>(quota_.snapshot().leased); };
    sources.quota_unknown_used = [this] {
      return static_cast<double>(quota_.snapshot().unknown_used);
    };
    sources.quota_unknown_limit = [this] {
      return static_cast<double>(quota_.snapshot().unknown_limit.value_or(0));
    };
    sources.quota_resets_at = [this] { return unix_seconds(quota_.snapshot().resets_at); };
    sources.quota_projected_month_end = [this] {
      return static_cast<double>(quota_.snapshot().projected_month_end);
    };
    sources.ready = [this] { return readiness_.answer().status == 200; };
    sources.degraded = [this] { return readiness_.answer().word == "degraded"; };
    sources.quota_mode = [this] {
      switch (quota_.snapshot().mode) {
        case quota::Mode::normal:
          return metrics::QuotaMode::normal;
        case quota::Mode::economy:
          return metrics::QuotaMode::economy;
        case quota::Mode::exhausted:
          return metrics::QuotaMode::exhausted;
      }
      return metrics::QuotaMode::normal;
    };
    auto sum = [this](auto of_worker) {
      double total = 0;
      for (const auto& worker : workers_) total += static_cast<double>(of_worker(*worker));
      return total;
    };
    sources.l1_bytes = [sum] { return sum([](const Worker& w) { return w.l1_bytes(); }); };
    sources.l1_entries = [sum] { return sum([](const Worker& w) { return w.l1_entries(); }); };
    sources.l1_evictions = [sum] { return sum([](const Worker& w) { return w.l1_evictions(); }); };
    sources.connections_open = [sum] {
      return sum([](const Worker& w) { return w.server_stats().open.load(); });
    };
    sources.output_pending_bytes = [sum] {
      return sum([](const Worker& w) { return w.server_stats().output_pending_bytes.load(); });
    };
    sources.output_refused = [sum] {
      return sum([](const Worker& w) { return w.server_stats().output_refused.load(); });
    };
    sources.output_paused = [sum] {
      return sum([](const Worker& w) { return w.server_stats().output_paused.load(); });
    };
    sources.slow_readers_closed = [sum] {
      return sum([](const Worker& w) { return w.server_stats().slow_readers_closed.load(); });
    };
    sources.access_log_dropped = [this] { return static_cast<double>(access_log_.dropped()); };
    sources.wall_now = [this] { return fleet_clock_.wall_now(); };
    sources.clock_skew = [this] {
      return std::chrono::duration<double>(fleet_clock_.offset()).count();
    };
    sources.next_refresh = [this] { return unix_seconds(next_refresh()); };
    return sources;
  }

  // Accumulates how long Redis has been unreachable, for wg_redis_degraded_seconds_total.
  class DegradedTime {
   public:
    void set(bool degraded, SteadyTime now) {
      std::lock_guard lock(mutex_);
      if (degraded && !since_) since_ = now;
      if (!degraded && since_) {
        total_ += now - *since_;
        since_.reset();
      }
    }
    double seconds(SteadyTime now) const {
      std::lock_guard lock(mutex_);
      auto total = total_;
      if (since_) total += now - *since_;
      return std::chrono::duration<double>(total).count();
    }

   private:
    mutable std::mutex mutex_;
    std::optional<SteadyTime> since_;
    SteadyTime::duration total_{};
  };

  const config::Invocation& invocation_;
  // Redis's time, which everything written to Redis or judged against it follows
  // (docs/clocks.md): measured on every Redis connection and once a second here.
  FleetClock fleet_clock_{SystemClock::instance()};
  config::Config config_;  // as started: what the parts bound at start run with
  config::Config loaded_;  // the last configuration built (reload thread once running)
  // The running [cache] settings, for the next refresh time /metrics and /admin/status show.
  std::atomic<std::shared_ptr<const config::CacheConfig>> cache_config_{
      std::make_shared<const config::CacheConfig>(config_.cache)};
  unsigned threads_;
  const cache::KeySpace keys_;  // redis.key_prefix: every key and the purge channel
  // Every connection's settings, built once: the password file is read at start only.
  const redis::Settings redis_settings_;
  const std::shared_ptr<http::TlsServerContext> tls_;  // null: the public listener is plain
  asio::io_context control_{1};
  cache::Generations generations_;
  redis::Client control_redis_;
  cache::RedisStore store_;
  redis::Subscriber purges_;
  // Sentinel mode only: hears +switch-master and moves every connection (docs/redis-client.md).
  std::unique_ptr<redis::SentinelWatcher> sentinel_watcher_;
  quota::QuotaCounter quota_;
  upstream::CircuitBreaker breaker_;
  serving::UpstreamHold hold_;
  serving::KnownWidgets known_widgets_;
  serving::ListEnds list_ends_{generations_};
  bool stopping_ = false;  // control thread only
  accesslog::AccessLog access_log_;
  metrics::Registry registry_;
  DegradedTime redis_degraded_;
  metrics::GatewayMetrics metrics_;
  Readiness readiness_;
  SharedLimiters limiter_;  // reload thread and constructor only
  std::atomic<std::shared_ptr<const api::WidgetPolicy>> widget_policy_;  // for the admin
  AdminHandler admin_handler_;
  http::HttpServer admin_server_;
  asio::signal_set signals_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<tracing::OtlpExporter> exporter_;  // null: spans are not exported
  std::size_t next_worker_ = 0;                      // control thread only
  // The SIGHUP helper (control thread starts and joins it; see reload()).
  std::mutex reload_mutex_;
  bool reload_running_ = false;  // reload_mutex_
  bool reload_again_ = false;    // reload_mutex_: a SIGHUP came while it ran
  bool draining_ = false;        // reload_mutex_: no reload starts any more
  std::jthread reload_thread_;   // last: destroyed (joined) first, should run() throw
};

}  // namespace

int run_gateway(const config::Invocation& invocation) {
  // A reader of stdout or stderr that goes away (a log shipper restarting) must not end the
  // process: writes then fail with EPIPE, which the access log and the event log survive.
  // Sockets are unaffected (Asio sends with MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  block_stop_signals(true);  // inherited by every thread started from here on
  log::set_level(invocation.config.log.level);
  warn_ignored_environment(invocation);
  Gateway gateway(invocation);
  return gateway.run();
}

void warn_ignored_environment(const config::Invocation& invocation) {
  // Ignored, as the contract says; but a misspelt name (WG_REDIS_URL for WG_REDIS) would
  // otherwise go unnoticed.
  if (invocation.unknown_environment.empty()) return;
  log::warn("environment_ignored", {{"variables", invocation.unknown_environment},
                                    {"known", config::known_environment()}});
}

}  // namespace wg::gateway
