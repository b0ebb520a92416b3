#include "service_fixture.hpp"

#include <atomic>

#include <sstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_future.hpp>
#include <future>

namespace wg::serving::test {
namespace asio = boost::asio;

WallTime local_time(int year, unsigned month, unsigned day, int hour, int minute, int second,
                    std::chrono::minutes offset) {
  using namespace std::chrono;
  const sys_days date{std::chrono::year{year} / std::chrono::month{month} / std::chrono::day{day}};
  return WallTime(date) + hours(hour) + minutes(minute) + seconds(second) - offset;
}

std::uint64_t redis_commands(wg::test::RedisServer& redis) {
  std::istringstream info(redis.command({"INFO", "commandstats"}));
  std::uint64_t total = 0;
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("cmdstat_", 0) != 0 || line.rfind("cmdstat_info:", 0) == 0) continue;
    auto at = line.find("calls=");
    if (at != std::string::npos) total += std::stoull(line.substr(at + 6));
  }
  return total;
}

std::uint64_t redis_calls(wg::test::RedisServer& redis, const std::vector<std::string>& commands) {
  std::istringstream info(redis.command({"INFO", "commandstats"}));
  std::uint64_t total = 0;
  for (std::string line; std::getline(info, line);) {
    for (const auto& command : commands) {
      if (line.rfind("cmdstat_" + command + ":", 0) != 0) continue;
      auto at = line.find("calls=");
      if (at != std::string::npos) total += std::stoull(line.substr(at + 6));
    }
  }
  return total;
}

WallTime default_start() {
  return local_time(2027, 3, 10, 12);
}

config::Config test_config() {
  config::Config config;
  config.upstream.base_url = "http://127.0.0.1:1";  // replaced by the stub's address
  config.upstream.connect_timeout = 2s;
  config.upstream.timeout = 5s;
  config.upstream.circuit_failures = 5;
  config.upstream.circuit_open_for = 30s;
  config.redis.timeout = 500ms;
  config.redis.reconnect_max = 200ms;
  config.cache.refresh_at = {4, 0};
  config.cache.utc_offset = std::chrono::minutes(180);
  config.cache.refresh_lag = 15min;
  config.cache.min_ttl = 1min;
  config.cache.max_ttl = 1h;
  config.cache.jitter = 0ms;
  config.cache.stale_while_revalidate = 10min;
  config.cache.stale_if_error = 24h;
  config.cache.negative_ttl = 5min;
  config.cache.l1_max_bytes = 64 * 1024 * 1024;
  config.quota.monthly_limit = 0;
  config.quota.utc_offset = std::chrono::minutes(180);
  config.quota.economy_at = 0.9;
  return config;
}

namespace {

// As the binary's, but reconnecting sooner after a test stops and restarts Redis.
redis::Settings test_redis_settings(const config::Config& config) {
  redis::Settings settings = redis_settings(config);
  settings.reconnect_min = 50ms;
  return settings;
}

// Each instance has a ledger of its own in the quota's Redis hash, as processes do.
int next_instance_number() {
  static std::atomic<int> next{0};
  return ++next;
}

}  // namespace

Instance::Instance(asio::io_context& ioc, const config::Config& config, Clock& clock,
                   RandomSource& random)
    : quota(clock, config.quota, "test-instance-" + std::to_string(next_instance_number()),
            KeySpace(config.redis.key_prefix)),
      breaker(
          config.upstream.circuit_failures,
          std::chrono::duration_cast<std::chrono::milliseconds>(config.upstream.circuit_open_for)),
      core(ioc.get_executor(), config, test_redis_settings(config), config.cache.l1_max_bytes,
           ProcessParts{clock, random, generations, quota, breaker, hold, known, nullptr, nullptr,
                        1, &list_ends}),
      redis(core.redis),
      upstream(core.upstream),
      store(core.store),
      l1(core.l1),
      tier(core.tier),
      lock(core.lock),
      fetcher(core.fetcher),
      service(core.service) {
  core.start();
  BOOST_REQUIRE_MESSAGE(ServiceFixture::eventually([this] { return redis.connected(); }),
                        "the Redis client did not connect");
  // The report made on connecting ends by deleting months long past: once that is done, no
  // command but the tests' own reaches Redis (tests count them).
  BOOST_REQUIRE_MESSAGE(
      ServiceFixture::eventually([this] { return !quota.months_deleted_through().empty(); }),
      "the quota's first report did not finish");
}

Instance::~Instance() = default;

ServiceFixture::ServiceFixture(std::function<void(config::Config&)> tweak, int stub_widgets,
                               WallTime start)
    : clock(start),
      config(test_config()),
      stub_work_(stub_ioc_.get_executor()),
      work_(ioc_.get_executor()) {
  stub::StubOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.widgets = static_cast<std::size_t>(stub_widgets);
  options.seed = 1;
  stub_ = std::make_unique<stub::StubServer>(stub_ioc_, options);
  stub_->start();
  stub_thread_ = std::thread([this] { stub_ioc_.run_for(5min); });

  config.upstream.base_url = "http://127.0.0.1:" + std::to_string(stub_->port());
  config.redis.url = redis_server.url();
  if (tweak) tweak(config);

  threads_.emplace_back([this] { ioc_.run_for(5min); });  // one io thread, as a worker
  try {
    add_instance();
  } catch (...) {
    teardown();
    throw;
  }
}

ServiceFixture::~ServiceFixture() {
  teardown();
}

void ServiceFixture::teardown() {
  stub_->stop();
  for (auto& instance : instances_) {
    instance->redis.stop();
    instance->upstream.close_idle();
  }
  // Let what is still running finish (bounded), then stop the loops.
  work_.reset();
  eventually([this] { return ioc_.stopped(); }, 5s);
  ioc_.stop();
  for (auto& thread : threads_) thread.join();
  instances_.clear();
  stub_work_.reset();
  eventually([this] { return stub_ioc_.stopped(); }, 5s);
  stub_ioc_.stop();
  stub_thread_.join();
}

Instance& ServiceFixture::add_instance() {
  return add_instance(clock);
}

Instance& ServiceFixture::add_instance(Clock& instance_clock) {
  instances_.push_back(std::make_unique<Instance>(ioc_, config, instance_clock, random));
  return *instances_.back();
}

std::future<Served> ServiceFixture::start_serve(const api::ApiRequest& request,
                                                Instance* instance) {
  Instance& target = instance ? *instance : main();
  return asio::co_spawn(
      ioc_,
      [&target, request]() -> asio::awaitable<Served> {
        co_return co_await target.service.serve(request);
      },
      asio::use_future);
}

Served ServiceFixture::wait(std::future<Served>& future) {
  BOOST_REQUIRE_MESSAGE(future.wait_for(30s) == std::future_status::ready,
                        "serve() did not finish within 30s");
  return future.get();
}

Served ServiceFixture::serve(const api::ApiRequest& request, Instance* instance) {
  auto future = start_serve(request, instance);
  return wait(future);
}

std::vector<Served> ServiceFixture::serve_concurrently(const api::ApiRequest& request, int count,
                                                       Instance* instance) {
  std::vector<std::future<Served>> futures;
  for (int i = 0; i < count; ++i) futures.push_back(start_serve(request, instance));
  std::vector<Served> results;
  for (auto& future : futures) results.push_back(wait(future));
  return results;
}

bool ServiceFixture::eventually(const std::function<bool()>& done,
                                std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

bool ServiceFixture::refreshes_done() {
  return eventually([this] { return service().background_refreshes() == 0; });
}

api::ApiRequest ServiceFixture::widget(std::size_t index) const {
  return widget_id(stub_->dataset().id(index));
}

api::ApiRequest ServiceFixture::widget_id(const std::string& id) const {
  return api::ApiRequest{api::Endpoint::widget, id, {}};
}

api::ApiRequest ServiceFixture::reviews(std::size_t index, std::uint32_t limit, std::uint64_t skip,
                                        std::optional<api::Platform> type) const {
  return api::ApiRequest{api::Endpoint::reviews, stub_->dataset().id(index), {limit, skip, type}};
}

std::optional<api::Platform> platform_of(std::size_t stub_index) {
  return api::parse_platform(stub::kPlatforms[stub_index]);
}

}  // namespace wg::serving::test
