#include "process/worker_pool.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/metrics/registry.hpp"

namespace wg::process {
namespace asio = boost::asio;

namespace {

// On the worker's thread: drops the L1 keys starting with `prefix`, or everything for "".
void erase_in(serving::ServingCore& core, const std::string& prefix) {
  if (prefix.empty()) {
    core.l1.clear();
  } else {
    core.l1.erase_prefix(prefix);
  }
}

}  // namespace

void WorkerPool::spawn(Setup setup) {
  ProcessParts parts = setup.parts;
  parts.siblings = setup.threads > 1 ? static_cast<serving::SiblingCaches*>(this) : nullptr;
  parts.workers = setup.threads;
  for (unsigned i = 0; i < setup.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(i, setup.threads, setup.config,
                                                setup.redis_settings, parts, setup.readiness,
                                                setup.limiters, setup.access_log));
    workers_.back()->use_tls(setup.tls);
  }
}

WorkerPool::~WorkerPool() {
  join();
}

asio::ip::tcp::endpoint WorkerPool::bind(asio::ip::tcp::endpoint endpoint) {
  for (auto& worker : workers_) endpoint = worker->bind(endpoint);
  return endpoint;
}

void WorkerPool::start() {
  for (auto& worker : workers_) worker->start();
}

asio::awaitable<void> WorkerPool::drain(std::chrono::steady_clock::duration timeout) {
  // Each worker says on its own thread when it has drained; the caller's thread polls.
  auto left = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  for (auto& worker : workers_) worker->stop(timeout, [left] { left->fetch_sub(1); });
  asio::steady_timer tick(co_await asio::this_coro::executor);
  while (left->load() > 0) {
    tick.expires_after(std::chrono::milliseconds(20));
    co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

void WorkerPool::join() {
  workers_.clear();
}

void WorkerPool::apply(const config::Config& config, const frontend::ClientLimiters& limiters) {
  for (auto& worker : workers_) worker->apply(config, limiters);
}

void WorkerPool::use_redis_primary(const std::string& host, std::uint16_t port) {
  for (auto& worker : workers_) worker->use_redis_primary(host, port);
}

void WorkerPool::erase_everywhere(const std::string& prefix) {
  for (auto& worker : workers_) {
    asio::post(worker->executor(), [&core = worker->core(), prefix] { erase_in(core, prefix); });
  }
}

void WorkerPool::drop_older(const std::string& key, WallTime stored_at, WallTime fresh_until) {
  for (auto& worker : workers_) {
    asio::post(worker->executor(), [&core = worker->core(), key, stored_at, fresh_until] {
      core.drop_older(key, stored_at, fresh_until);
    });
  }
}

void WorkerPool::clear_l1_when_redis_up() {
  // Each worker forgets its L1 once its own connection is back too: until then its L1 is all
  // that serves its cached keys (after a failover the subscriber is often back first).
  for (auto& worker : workers_) {
    asio::post(worker->executor(), [&core = worker->core()] { core.clear_l1_when_redis_up(); });
  }
}

void WorkerPool::on_redis_state_change(std::function<void()> changed) {
  for (auto& worker : workers_) {
    worker->core().redis.on_state_change([changed](bool) { changed(); });
  }
}

bool WorkerPool::redis_usable() const {
  for (const auto& worker : workers_) {
    if (!worker->redis_usable()) return false;
  }
  return !workers_.empty();
}

bool WorkerPool::redis_up() const {
  for (const auto& worker : workers_) {
    if (!worker->redis_connected()) return false;
  }
  return !workers_.empty();
}

bool WorkerPool::copies_in_l1() const {
  for (const auto& worker : workers_) {
    if (worker->l1_entries() > 0) return true;
  }
  return false;
}

std::vector<frontend::WorkerLoad> WorkerPool::loads() const {
  std::vector<frontend::WorkerLoad> loads;
  for (const auto& worker : workers_) {
    const http::ServerStats& stats = worker->server_stats();
    loads.push_back({stats.requests.load(std::memory_order_relaxed),
                     stats.open.load(std::memory_order_relaxed), worker->l1_entries(),
                     worker->l1_bytes(), worker->redis_usable()});
  }
  return loads;
}

std::uint64_t WorkerPool::spans_dropped() const {
  std::uint64_t dropped = 0;
  for (const auto& worker : workers_) dropped += worker->span_queue().dropped();
  return dropped;
}

std::uint64_t WorkerPool::forced_samples_declined() const {
  std::uint64_t declined = 0;
  for (const auto& worker : workers_) declined += worker->forced_samples_declined();
  return declined;
}

std::vector<tracing::SpanQueue*> WorkerPool::span_queues() {
  std::vector<tracing::SpanQueue*> queues;
  for (auto& worker : workers_) queues.push_back(&worker->span_queue());
  return queues;
}

template <class Of>
double WorkerPool::sum(Of of_worker) const {
  double total = 0;
  for (const auto& worker : workers_) total += static_cast<double>(of_worker(*worker));
  return total;
}

void WorkerPool::describe(metrics::ScrapeSources& sources) const {
  sources.l1_bytes = [this] { return sum([](const Worker& w) { return w.l1_bytes(); }); };
  sources.l1_entries = [this] { return sum([](const Worker& w) { return w.l1_entries(); }); };
  sources.l1_evictions = [this] { return sum([](const Worker& w) { return w.l1_evictions(); }); };
  sources.connections_open = [this] {
    return sum([](const Worker& w) { return w.server_stats().open.load(); });
  };
  sources.output_pending_bytes = [this] {
    return sum([](const Worker& w) { return w.server_stats().output_pending_bytes.load(); });
  };
  sources.output_refused = [this] {
    return sum([](const Worker& w) { return w.server_stats().output_refused.load(); });
  };
  sources.output_paused = [this] {
    return sum([](const Worker& w) { return w.server_stats().output_paused.load(); });
  };
  sources.slow_readers_closed = [this] {
    return sum([](const Worker& w) { return w.server_stats().slow_readers_closed.load(); });
  };
}

void WorkerPool::register_metrics(metrics::Registry& registry) const {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    const Worker* worker = workers_[i].get();
    registry.callback_counter(
        "wg_worker_requests_total", "Requests read by each io worker on the public listener.",
        {{"worker", std::to_string(i)}}, [worker] {
          return static_cast<double>(
              worker->server_stats().requests.load(std::memory_order_relaxed));
        });
  }
}

asio::awaitable<serving::Served> WorkerPool::serve(const api::ApiRequest& request) {
  Worker& worker = *workers_[next_worker_++ % workers_.size()];
  auto on_worker = [&worker, request]() -> asio::awaitable<serving::Served> {
    co_return co_await worker.core().service.serve(request);
  };
  co_return co_await asio::co_spawn(worker.executor(), on_worker, asio::use_awaitable);
}

asio::awaitable<serving::GatewayService::Prefetched> WorkerPool::prefetch(api::ApiRequest request,
                                                                          WallTime boundary,
                                                                          bool again) {
  Worker& worker = *workers_[next_worker_++ % workers_.size()];
  auto on_worker = [&worker, request = std::move(request), boundary,
                    again]() -> asio::awaitable<serving::GatewayService::Prefetched> {
    co_return co_await worker.core().service.prefetch(request, boundary, again);
  };
  co_return co_await asio::co_spawn(worker.executor(), on_worker, asio::use_awaitable);
}

asio::awaitable<serving::DemandCounts> WorkerPool::take_demand() {
  serving::DemandCounts all;
  for (auto& worker : workers_) {
    auto on_worker = [&core = worker->core()]() -> asio::awaitable<serving::DemandCounts> {
      co_return core.service.demand().take();
    };
    serving::DemandCounts taken =
        co_await asio::co_spawn(worker->executor(), on_worker, asio::use_awaitable);
    serving::merge_into(all, std::move(taken), serving::kMaxKeysPerHandOver * 4);
  }
  co_return all;
}

// Admin's view of a key in L1: a copy, so the control thread shares no memory with a worker
// (whose entry may still gain a compressed variant).
asio::awaitable<std::shared_ptr<const cache::Entry>> WorkerPool::find_in_l1(std::string key) {
  co_return co_await copy_from_l1(std::move(key), workers_.size());
}

asio::awaitable<std::shared_ptr<const cache::Entry>> WorkerPool::find_copy(std::string key,
                                                                           unsigned asking) {
  co_return co_await copy_from_l1(std::move(key), asking);
}

// A copy, made on its owner's thread, of the first worker's L1 entry for `key` (worker `skip`
// not asked); null when none holds one.
asio::awaitable<std::shared_ptr<const cache::Entry>> WorkerPool::copy_from_l1(std::string key,
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
asio::awaitable<std::vector<std::vector<serving::WidgetCost>>> WorkerPool::upstream_costs() {
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

asio::awaitable<void> WorkerPool::erase_from_l1(std::string prefix) {
  for (auto& worker : workers_) {
    auto on_worker = [&core = worker->core(), prefix]() -> asio::awaitable<void> {
      erase_in(core, prefix);
      co_return;
    };
    co_await asio::co_spawn(worker->executor(), on_worker, asio::use_awaitable);
  }
}

}  // namespace wg::process
