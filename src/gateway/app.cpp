#include "widget_gateway/gateway/app.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "admin_handler.hpp"
#include "cache_tier.hpp"
#include "fetch_lock.hpp"
#include "gateway_service.hpp"
#include "public_handler.hpp"
#include "readiness.hpp"
#include "upstream_fetcher.hpp"
#include "widget_gateway/accesslog/access_log.hpp"
#include "widget_gateway/cache/l1_cache.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/http/server.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/metrics/registry.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/redis/subscriber.hpp"
#include "widget_gateway/upstream/circuit_breaker.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace wg::gateway {
namespace asio = boost::asio;

namespace {

// The circuit's first pause after it opens; each failed probe doubles it up to
// upstream.circuit_open_for. A blip of a few seconds then costs about a second of 502s for
// uncached keys (and of not refreshing stale ones), not a whole circuit_open_for.
constexpr std::chrono::milliseconds kFirstCircuitPause{1000};

unsigned thread_count(const config::Config& config) {
  if (config.server.threads > 0) return config.server.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

redis::Settings redis_settings(const config::Config& config) {
  redis::Settings settings;
  settings.endpoint = *redis::parse_url(config.redis.url);  // validated by the config loader
  settings.command_timeout = config.redis.timeout;
  settings.connect_timeout = config.redis.timeout;
  settings.reconnect_max = config.redis.reconnect_max;
  return settings;
}

std::string address_text(const asio::ip::tcp::endpoint& endpoint) {
  auto address = endpoint.address();
  std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

// Everything the gateway runs, in construction order (destroyed in reverse).
class Gateway {
 public:
  explicit Gateway(const config::Invocation& invocation)
      : invocation_(invocation),
        config_(invocation.config),
        threads_(thread_count(config_)),
        ioc_(static_cast<int>(threads_)),
        redis_(ioc_.get_executor(), redis_settings(config_)),
        upstream_(ioc_.get_executor(), config_.upstream, SystemClock::instance()),
        store_(redis_, generations_),
        purges_(ioc_.get_executor(), redis_settings(config_), {std::string(cache::kPurgeChannel)},
                [this](std::string_view, std::string_view message) { this->on_purge(message); }),
        quota_(redis_, SystemClock::instance(), config_.quota),
        l1_(config_.cache.l1_max_bytes),
        breaker_(
            config_.upstream.circuit_failures,
            std::chrono::duration_cast<std::chrono::milliseconds>(
                config_.upstream.circuit_open_for),
            [this](upstream::CircuitBreaker::State, upstream::CircuitBreaker::State to) {
              const bool open = to != upstream::CircuitBreaker::State::closed;
              readiness_.set_circuit_open(open);
              metrics_.circuit_state(open);
              log::warn("circuit", {{"state", upstream::to_string(to)}});
            },
            kFirstCircuitPause),
        access_log_(config_.log.access_log, config_.log.sample, DefaultRandom::instance()),
        metrics_(registry_, scrape_sources()),
        tier_(l1_, store_, SystemClock::instance(), &metrics_),
        fetch_lock_(redis_, DefaultRandom::instance()),
        fetcher_(upstream_, quota_, breaker_, SystemClock::instance(), DefaultRandom::instance(),
                 &metrics_),
        service_(ioc_.get_executor(),
                 {tier_, fetcher_, fetch_lock_, quota_, SystemClock::instance(),
                  DefaultRandom::instance(), &metrics_},
                 config_),
        readiness_(redis_, quota_),
        public_handler_(service_, readiness_, SystemClock::instance(), config_, &metrics_,
                        &access_log_),
        admin_handler_(
            {readiness_, registry_, quota_, service_, tier_, store_, SystemClock::instance(),
             [this](std::string_view id) { return public_handler_.allows_widget(id); }},
            config_.admin.token),
        public_server_(ioc_, "public", config_.server, public_handler_, threads_ == 1),
        admin_server_(ioc_, "admin", config_.server, admin_handler_, threads_ == 1),
        signals_(ioc_, SIGINT, SIGTERM, SIGHUP) {}

  int run() {
    auto public_endpoint = public_server_.bind(config_.server.listen);
    auto admin_endpoint = admin_server_.bind(config_.admin.listen);

    redis_.on_state_change([this](bool up) {
      metrics_.redis_state(up);
      redis_degraded_.set(!up, SystemClock::instance().steady_now());
      if (up) asio::co_spawn(ioc_, quota_.reconcile(), asio::detached);
    });
    metrics_.redis_state(false);
    redis_degraded_.set(true, SystemClock::instance().steady_now());
    registry_.callback_counter(
        "wg_redis_degraded_seconds_total", "Time spent without a Redis connection.", {},
        [this] { return redis_degraded_.seconds(SystemClock::instance().steady_now()); });
    // Purges announced while this instance could not hear them are lost: after any reconnect
    // it forgets its L1 and the generations it knew.
    purges_.on_state_change([this](bool up) {
      if (!up) return;
      generations_.clear();
      l1_.clear();
    });
    admin_server_.set_max_body_bytes(64 * 1024);
    redis_.start();
    purges_.start();
    public_server_.start();
    admin_server_.start();
    log::info("listening", {{"listener", "public"}, {"address", address_text(public_endpoint)}});
    log::info("listening", {{"listener", "admin"}, {"address", address_text(admin_endpoint)}});
    log::info("started", {{"version", WG_VERSION},
                          {"threads", threads_},
                          {"upstream", config_.upstream.base_url},
                          {"redis", config_.redis.url}});
    wait_for_signal();

    std::vector<std::thread> workers;
    for (unsigned i = 1; i < threads_; ++i) workers.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : workers) t.join();
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
      asio::co_spawn(ioc_, shutdown(), asio::detached);
    });
  }

  asio::awaitable<void> shutdown() {
    auto timeout = config_.server.drain_timeout;
    co_await public_server_.drain(timeout);
    co_await admin_server_.drain(std::chrono::milliseconds(100));
    redis_.stop();
    purges_.stop();
    upstream_.close_idle();
    ioc_.stop();
  }

  // The file is read and applied on a helper thread: no blocking I/O on an io thread, and every
  // setter apply() calls is thread-safe. Joining the previous helper first keeps quick
  // successive reloads in order; the member is declared last, so its destructor joins a helper
  // still running before anything apply() touches is destroyed (a detached helper could outlive
  // the gateway when SIGTERM follows SIGHUP closely).
  void reload() {
    if (reload_thread_.joinable()) reload_thread_.join();
    auto sources = invocation_.sources;
    reload_thread_ = std::jthread([this, sources] {
      config::Config fresh;
      try {
        fresh = config::build_config(sources);
      } catch (const std::exception& e) {
        log::error("reload_rejected", {{"error", e.what()}});
        return;
      }
      apply(fresh);
    });
  }

  // Reloadable: [cache] (TTL policy, stale windows, derivation, L1 size), [quota], [cors],
  // [access], admin.token, log.level, log.sample (and a reopen of a log.access_log file). The
  // rest is bound to sockets, pools or threads made at start; a change there is reported and
  // waits for a restart. config_ keeps the start-up values those parts still run with.
  void apply(const config::Config& fresh) {
    log::set_level(fresh.log.level);
    l1_.set_max_bytes(fresh.cache.l1_max_bytes);
    access_log_.set_sample(fresh.log.sample);
    access_log_.reopen();
    service_.update(fresh);
    public_handler_.update(fresh);
    const quota::Mode mode_before = quota_.snapshot().mode;
    quota_.set_config(fresh.quota);
    const quota::Mode mode_after = quota_.snapshot().mode;
    if (mode_after != mode_before) {
      log::warn("quota_mode", {{"mode", quota::to_string(mode_after)}, {"cause", "reload"}});
    }
    admin_handler_.set_token(fresh.admin.token);

    std::string restart_needed;
    auto note = [&restart_needed](bool changed, std::string_view what) {
      if (!changed) return;
      if (!restart_needed.empty()) restart_needed += ",";
      restart_needed += what;
    };
    note(!(fresh.server == config_.server), "server");
    note(!(fresh.upstream == config_.upstream), "upstream");
    note(!(fresh.redis == config_.redis), "redis");
    note(!(fresh.admin.listen == config_.admin.listen), "admin.listen");
    note(fresh.log.access_log != config_.log.access_log, "log.access_log");
    if (!restart_needed.empty()) log::warn("reload_needs_restart", {{"sections", restart_needed}});
    log::info("reloaded", {{"file", fresh.config_file}});
  }

  void on_purge(std::string_view message) {
    auto prefix = store_.apply_purge_message(message);
    if (!prefix) {
      log::warn("purge_message_malformed", {{"message", message}});
    } else if (prefix->empty()) {
      l1_.clear();
    } else {
      l1_.erase_prefix(*prefix);
    }
  }

  metrics::ScrapeSources scrape_sources() {
    metrics::ScrapeSources sources;
    sources.quota_used = [this] { return static_cast<double>(quota_.snapshot().used); };
    sources.quota_limit = [this] { return static_cast<double>(quota_.snapshot().limit); };
    sources.quota_remaining = [this] {
      auto s = quota_.snapshot();
      return s.limit == 0 ? 0.0 : static_cast<double>(s.limit > s.used ? s.limit - s.used : 0);
    };
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
    sources.l1_bytes = [this] { return static_cast<double>(l1_.bytes()); };
    sources.l1_entries = [this] { return static_cast<double>(l1_.entries()); };
    sources.connections_open = [this] {
      return static_cast<double>(public_server_.stats().open.load());
    };
    sources.access_log_dropped = [this] { return static_cast<double>(access_log_.dropped()); };
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
  config::Config config_;
  unsigned threads_;
  asio::io_context ioc_;
  redis::Client redis_;
  cache::Generations generations_;
  upstream::Client upstream_;
  cache::RedisStore store_;
  redis::Subscriber purges_;
  quota::QuotaCounter quota_;
  cache::L1Cache l1_;
  upstream::CircuitBreaker breaker_;
  accesslog::AccessLog access_log_;
  metrics::Registry registry_;
  DegradedTime redis_degraded_;
  metrics::GatewayMetrics metrics_;
  CacheTier tier_;
  FetchLock fetch_lock_;
  UpstreamFetcher fetcher_;
  GatewayService service_;
  Readiness readiness_;
  PublicHandler public_handler_;
  AdminHandler admin_handler_;
  http::HttpServer public_server_;
  http::HttpServer admin_server_;
  asio::signal_set signals_;
  std::jthread reload_thread_;  // last: destroyed (joined) first
};

}  // namespace

int run_gateway(const config::Invocation& invocation) {
  log::set_level(invocation.config.log.level);
  Gateway gateway(invocation);
  return gateway.run();
}

}  // namespace wg::gateway
