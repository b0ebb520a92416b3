#include "widget_gateway/gateway/app.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>
#include <thread>
#include <vector>

#include "admin_handler.hpp"
#include "gateway_service.hpp"
#include "public_handler.hpp"
#include "readiness.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/http/server.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace wg::gateway {
namespace asio = boost::asio;

namespace {

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
        store_(redis_),
        quota_(redis_, SystemClock::instance(), config_.quota),
        service_({store_, upstream_, quota_, SystemClock::instance(), DefaultRandom::instance()},
                 config_),
        readiness_(redis_, quota_),
        public_handler_(service_, readiness_, config_),
        admin_handler_(readiness_, config_.admin.token),
        public_server_(ioc_, "public", config_.server, public_handler_),
        admin_server_(ioc_, "admin", config_.server, admin_handler_),
        signals_(ioc_, SIGINT, SIGTERM, SIGHUP) {}

  int run() {
    auto public_endpoint = public_server_.bind(config_.server.listen);
    auto admin_endpoint = admin_server_.bind(config_.admin.listen);

    redis_.on_state_change([this](bool up) {
      if (up) asio::co_spawn(ioc_, quota_.reconcile(), asio::detached);
    });
    redis_.start();
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
    upstream_.close_idle();
    ioc_.stop();
  }

  // The file is read on a helper thread: no blocking I/O on an io thread.
  void reload() {
    auto sources = invocation_.sources;
    std::thread([this, sources] {
      try {
        config::Config fresh = config::build_config(sources);
        asio::post(ioc_, [this, fresh] { apply(fresh); });
      } catch (const std::exception& e) {
        log::error("reload_rejected", {{"error", e.what()}});
      }
    }).detach();
  }

  void apply(const config::Config& fresh) {
    log::set_level(fresh.log.level);
    service_.update(fresh);
    public_handler_.update(fresh);
    quota_.set_config(fresh.quota);
    admin_handler_.set_token(fresh.admin.token);
    log::info("reloaded", {{"file", fresh.config_file}});
  }

  const config::Invocation& invocation_;
  config::Config config_;
  unsigned threads_;
  asio::io_context ioc_;
  redis::Client redis_;
  upstream::Client upstream_;
  cache::RedisStore store_;
  quota::QuotaCounter quota_;
  GatewayService service_;
  Readiness readiness_;
  PublicHandler public_handler_;
  AdminHandler admin_handler_;
  http::HttpServer public_server_;
  http::HttpServer admin_server_;
  asio::signal_set signals_;
};

}  // namespace

int run_gateway(const config::Invocation& invocation) {
  log::set_level(invocation.config.log.level);
  Gateway gateway(invocation);
  return gateway.run();
}

}  // namespace wg::gateway
