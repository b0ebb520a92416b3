#include <boost/test/unit_test.hpp>

#include <atomic>
#include <ctime>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "stack.hpp"

using namespace wg::test;

namespace {

// `count` GETs of `target` at once, spread round-robin over `ports`; returns the statuses.
std::vector<int> concurrent_gets(const std::vector<std::uint16_t>& ports, const std::string& target,
                                 int count) {
  std::vector<int> statuses(static_cast<std::size_t>(count), 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      statuses[static_cast<std::size_t>(i)] =
          http_get(ports[static_cast<std::size_t>(i) % ports.size()], target).status;
    });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

// A stream of requests from a few client threads: cached targets round-robin, and uncached
// targets (each asked once) whenever some are queued. Records every non-200 answer.
class RequestStream {
 public:
  RequestStream(std::uint16_t port, std::vector<std::string> cached, int threads)
      : port_(port), cached_(std::move(cached)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~RequestStream() { stop(); }

  void stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  void queue_uncached(const std::vector<std::string>& targets) {
    std::lock_guard lock(mutex_);
    for (const auto& t : targets) uncached_.push_back(t);
  }
  // Every queued uncached target has been answered.
  bool uncached_done() {
    std::lock_guard lock(mutex_);
    return uncached_.empty() && in_flight_ == 0;
  }
  int answered() const { return answered_.load(); }
  int failed() const { return failed_.load(); }
  std::string first_failure() {
    std::lock_guard lock(mutex_);
    return first_failure_;
  }

 private:
  void loop(int seed) {
    std::size_t next = static_cast<std::size_t>(seed);
    while (!stop_) {
      std::string target;
      bool uncached = false;
      {
        std::lock_guard lock(mutex_);
        if (!uncached_.empty()) {
          target = uncached_.front();
          uncached_.pop_front();
          uncached = true;
          ++in_flight_;
        }
      }
      if (!uncached) target = cached_[next++ % cached_.size()];
      HttpResponse response = http_get(port_, target);
      ++answered_;
      if (response.status != 200) {
        std::lock_guard lock(mutex_);
        if (failed_++ == 0) {
          first_failure_ = target + " -> " + std::to_string(response.status) + " " + response.body;
        }
      }
      if (uncached) {
        std::lock_guard lock(mutex_);
        --in_flight_;
      }
    }
  }

  std::uint16_t port_;
  std::vector<std::string> cached_;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0};
  std::atomic<int> failed_{0};
  std::mutex mutex_;
  std::deque<std::string> uncached_;
  int in_flight_ = 0;
  std::string first_failure_;
  std::vector<std::thread> threads_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(resilience_test)

BOOST_AUTO_TEST_CASE(hundred_concurrent_requests_on_one_cold_key_make_one_upstream_call) {
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url());
  const std::string id = stub.widgets(1).front().id;
  stub.reset();
  stub.latency(300);  // every request arrives while the one fetch is under way

  auto statuses = concurrent_gets({gateway.port()}, widget_path(id), 100);
  for (int status : statuses) BOOST_TEST(status == 200);
  BOOST_TEST(stub.stats().total == 1u);
}

BOOST_AUTO_TEST_CASE(hundred_concurrent_requests_over_two_instances_make_one_upstream_call) {
  RedisServer redis;
  Stub stub;
  Gateway first(stub.base_url(), redis.url());
  Gateway second(stub.base_url(), redis.url());
  const std::string id = stub.widgets(1).front().id;  // 700 reviews: window 0 serves it
  stub.reset();
  stub.latency(300);

  auto statuses = concurrent_gets({first.port(), second.port()}, reviews_path(id, "limit=20"), 100);
  for (int status : statuses) BOOST_TEST(status == 200);
  BOOST_TEST(stub.stats().total == 1u);
  // And both now answer it from cache.
  BOOST_TEST(first.get(reviews_path(id, "limit=20")).header("cache-status").find("hit") !=
             std::string::npos);
  BOOST_TEST(second.get(reviews_path(id, "limit=20")).header("cache-status").find("hit") !=
             std::string::npos);
  BOOST_TEST(stub.stats().total == 1u);
}

BOOST_AUTO_TEST_CASE(redis_killed_during_a_request_stream_fails_nothing_and_quota_reconciles) {
  RedisServer redis;
  Stub stub({}, 400);
  // Hundreds of new widgets from one client, some during the outage (when Redis cannot say
  // which ids are known): not held back as unknown ids (unlimited quota: no budget either).
  Gateway gateway(stub.base_url(), redis.url(), {}, "[access]\nunknown_per_ip_rate = 0\n");
  auto widgets = stub.widgets(300);
  BOOST_REQUIRE_EQUAL(widgets.size(), 300u);

  // Cached keys: warm them first.
  std::vector<std::string> cached;
  for (std::size_t i = 0; i < 6; ++i) {
    cached.push_back(widget_path(widgets[i].id));
    cached.push_back(reviews_path(widgets[i].id, "limit=10&skip=2"));
  }
  for (const auto& target : cached) BOOST_REQUIRE_EQUAL(gateway.get(target).status, 200);
  // Uncached keys: each asked once, in three phases.
  std::size_t next_widget = 10;
  auto uncached_batch = [&](int count) {
    std::vector<std::string> batch;
    for (int i = 0; i < count; ++i) {
      const std::string& id = widgets[next_widget++].id;
      batch.push_back(i % 2 ? widget_path(id) : reviews_path(id, "limit=5"));
    }
    return batch;
  };
  const std::string quota_key = current_quota_key();

  RequestStream stream(gateway.port(), cached, 4);
  stream.queue_uncached(uncached_batch(30));  // Redis up
  BOOST_REQUIRE(eventually([&] { return stream.uncached_done(); }));

  // Kill Redis while the stream goes on. No uncached request is in flight now, so every
  // upstream call from here on is counted while Redis is down or in the new Redis.
  const std::uint64_t calls_before_kill = stub.stats().total;
  redis.stop();
  stream.queue_uncached(uncached_batch(30));  // Redis down: counted in process
  BOOST_REQUIRE(eventually([&] { return stream.uncached_done(); }));
  const int answered_during_outage = stream.answered();
  BOOST_TEST(stub.stats().total == calls_before_kill + 30);
  BOOST_TEST(eventually(
      [&] { return gateway.get("/readyz").body.find("\"redis\":\"down\"") != std::string::npos; }));

  // Redis back on the same port (empty: no persistence): the gateway reconnects and reports
  // its month's figures, counted during the outage included.
  redis.start();
  BOOST_REQUIRE(eventually(
      [&] { return gateway.get("/readyz").body.find("\"redis\":\"up\"") != std::string::npos; }));
  stream.queue_uncached(uncached_batch(30));
  BOOST_REQUIRE(eventually([&] { return stream.uncached_done(); }));
  stream.stop();

  BOOST_TEST(stream.failed() == 0);
  BOOST_TEST_MESSAGE("first failure: " << stream.first_failure());
  BOOST_TEST(stream.answered() > answered_during_outage);
  const std::uint64_t counted_since_kill = stub.stats().total - calls_before_kill;
  BOOST_TEST(counted_since_kill >= 60u);
  // The new Redis learns the whole month again from the gateway's cumulative report: what it
  // counts as spent (the counter less unspent leases) is every upstream call.
  long long spent_in_redis = -1;
  BOOST_TEST(eventually([&] {
    spent_in_redis = redis.integer({"GET", quota_key}) -
                     redis.integer({"HGET", quota_key + ":leases", "leased"});
    return spent_in_redis == static_cast<long long>(stub.stats().total);
  }));
  BOOST_TEST_MESSAGE("spent in Redis " << spent_in_redis << ", upstream calls "
                                       << stub.stats().total);
}

BOOST_AUTO_TEST_CASE(thousand_random_unknown_ids_twice_cost_at_most_a_thousand_calls) {
  RedisServer redis;
  Stub stub;
  // Negative caching alone: the per-client limit for unknown ids is off here.
  Gateway gateway(stub.base_url(), redis.url(), {}, "[access]\nunknown_per_ip_rate = 0\n");
  std::set<std::string> known;
  for (const auto& w : stub.widgets()) known.insert(w.id);
  stub.reset();

  std::mt19937_64 draw(20240601);
  std::vector<std::string> targets;
  while (targets.size() < 1000) {
    char id[25];
    std::snprintf(id, sizeof id, "%012llx%012llx",
                  static_cast<unsigned long long>(draw() & 0xffffffffffffULL),
                  static_cast<unsigned long long>(draw() & 0xffffffffffffULL));
    if (known.count(id)) continue;
    targets.push_back(targets.size() % 2 ? reviews_path(id, "limit=10") : widget_path(id));
  }

  std::atomic<int> wrong{0};
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (std::size_t i = t; i < targets.size(); i += 4) {
          const int expected = i % 2 ? 400 : 404;
          if (gateway.get(targets[i]).status != expected) ++wrong;
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(stub.stats().total <= 1000u);
}

BOOST_AUTO_TEST_CASE(a_warm_key_is_an_l1_hit_with_redis_stopped) {
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url());
  const std::string target = widget_path(stub.widgets(1).front().id);
  stub.reset();
  auto first = gateway.get(target);
  BOOST_REQUIRE_EQUAL(first.status, 200);
  BOOST_REQUIRE_EQUAL(gateway.get(target).status, 200);

  redis.stop();
  BOOST_REQUIRE(eventually(
      [&] { return gateway.get("/readyz").body.find("\"redis\":\"down\"") != std::string::npos; }));
  // Ten connections: the kernel spreads them over both workers, and a worker that never saw
  // the key takes a copy from the one that did instead of going upstream.
  for (int i = 0; i < 10; ++i) {
    auto hit = gateway.get(target);
    BOOST_TEST(hit.status == 200);
    BOOST_TEST(hit.body == first.body);
    BOOST_TEST(hit.header("cache-status").find("hit") != std::string::npos);
  }
  BOOST_TEST(stub.stats().total == 1u);
}

BOOST_AUTO_TEST_CASE(a_page_the_widget_data_proves_is_local_on_every_worker_with_redis_stopped) {
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url());
  std::string id;
  for (const StubWidget& widget : stub.widgets()) {
    if (widget.total_review_amount == 0) id = widget.id;
  }
  BOOST_REQUIRE(!id.empty());
  stub.reset();
  // One worker holds the widget data, which proves every page of its reviews empty.
  BOOST_REQUIRE_EQUAL(gateway.get(widget_path(id)).status, 200);

  redis.stop();
  BOOST_REQUIRE(eventually(
      [&] { return gateway.get("/readyz").body.find("\"redis\":\"down\"") != std::string::npos; }));
  // Twenty connections over both workers: one that never saw the widget data takes a copy
  // from the one that did, and answers the page from it instead of fetching the page's window.
  for (int i = 0; i < 20; ++i) {
    auto page = gateway.get(reviews_path(id, "limit=10&skip=2"));
    BOOST_TEST(page.status == 200);
    BOOST_TEST(page.body == "[]");
    BOOST_TEST(page.header("cache-status").find("detail=local") != std::string::npos,
               page.header("cache-status"));
  }
  BOOST_TEST(stub.stats().total == 1u);
}

BOOST_AUTO_TEST_CASE(after_an_upstream_blip_the_circuit_reopens_long_before_circuit_open_for) {
  RedisServer redis;
  Stub stub;
  // A pause this long would keep cold keys failing for a minute after upstream is back; the
  // first pause is short (it only grows while probes keep failing).
  Gateway gateway(stub.base_url(), redis.url(), {}, "[upstream]\ncircuit_open_for = \"60s\"\n");
  const auto widgets = stub.widgets(6);
  stub.fault("status503");
  for (int i = 0; i < 5; ++i) {
    BOOST_REQUIRE_EQUAL(gateway.get(widget_path(widgets[static_cast<std::size_t>(i)].id)).status,
                        502);
  }
  BOOST_REQUIRE(gateway.get("/readyz").body.find("\"upstream\":\"circuit-open\"") !=
                std::string::npos);

  stub.fault("none");
  const std::string cold = widget_path(widgets[5].id);
  BOOST_TEST(eventually([&] { return gateway.get(cold).status == 200; }, 15s));
  BOOST_TEST(gateway.get("/readyz").body.find("\"upstream\":\"ok\"") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()  // resilience_test
