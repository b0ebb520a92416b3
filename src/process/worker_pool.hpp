#pragma once
// The io workers of the process, and everything that reaches all of them: a change posted to
// each (a reload, a purge, a newer copy, a new Redis primary), a question asked of each on its
// own thread (admin lookups, the other workers' L1 for a worker without Redis), and the sums of
// what each counts, read from any thread (metrics, /readyz, /admin/status). The pool is built
// and destroyed on the control thread; the workers' state stays theirs (docs/threading.md).

#include <atomic>
#include <memory>
#include <vector>

#include "frontend/admin_handler.hpp"
#include "prefetch/prefetch_leader.hpp"
#include "process/fleet_listener.hpp"
#include "process/worker.hpp"
#include "serving/cache_tier.hpp"

namespace wg::metrics {
class Registry;
struct ScrapeSources;
}  // namespace wg::metrics

namespace wg::process {

class WorkerPool final : public frontend::Workers,
                         public serving::SiblingCaches,
                         public prefetch::PrefetchTarget,
                         public FleetListener {
 public:
  struct Setup {
    unsigned threads = 1;
    const config::Config& config;
    const redis::Settings& redis_settings;
    ProcessParts parts;  // `siblings` is set by the pool (with more than one worker)
    const Readiness& readiness;
    frontend::ClientLimiters limiters;
    accesslog::AccessLog* access_log = nullptr;
    std::shared_ptr<const http::TlsServerContext> tls;  // null: the public listener is plain
  };
  // Empty until spawn(): the pool exists before the parts its workers use (the metrics read
  // it, the fleet's channels post to it).
  WorkerPool() = default;
  // Joins every worker's thread (after drain()).
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Builds the workers (once, on the control thread, before bind()).
  void spawn(Setup setup);

  // Binds the public port: the first worker the configured address (port 0 picks one), the
  // others the port it got. Returns where it listens.
  boost::asio::ip::tcp::endpoint bind(boost::asio::ip::tcp::endpoint endpoint);
  void start();
  // Every worker drains in parallel (up to `timeout` each); completes when all have.
  boost::asio::awaitable<void> drain(std::chrono::steady_clock::duration timeout);
  // Joins the workers' threads (after drain()); nothing may be posted to them after this.
  void join();

  // Posted to every worker, each applying it on its own thread.
  void apply(const config::Config& config, const frontend::ClientLimiters& limiters);
  // FleetListener: the fleet's channels, on the control thread.
  void use_redis_primary(const std::string& host, std::uint16_t port) override;
  void erase_everywhere(const std::string& prefix) override;  // "" clears
  void drop_older(const std::string& key, WallTime stored_at, WallTime fresh_until) override;
  void clear_l1_when_redis_up() override;
  // PrefetchTarget: one key's prefetch on the next worker in turn; the workers' demand counts.
  boost::asio::awaitable<serving::GatewayService::Prefetched> prefetch(api::ApiRequest request,
                                                                       WallTime boundary,
                                                                       bool again) override;
  boost::asio::awaitable<serving::DemandCounts> take_demand() override;
  // `changed` runs on the thread of a worker's Redis connection that went up or down.
  void on_redis_state_change(std::function<void()> changed);

  // Any thread.
  bool redis_usable() const;  // every worker's connection up and without error replies
  bool redis_up() const;      // every worker's connection up
  bool copies_in_l1() const;  // some worker's L1 holds an entry
  std::vector<frontend::WorkerLoad> loads() const;
  std::uint64_t spans_dropped() const;
  std::uint64_t forced_samples_declined() const;
  std::vector<tracing::SpanQueue*> span_queues();
  // The L1, connection and output figures of /metrics, summed over the workers.
  void describe(metrics::ScrapeSources& sources) const;
  // wg_worker_requests_total: how evenly the kernel spreads the load over the workers.
  void register_metrics(metrics::Registry& registry) const;

  // frontend::Workers, for the admin listener (on the control thread).
  boost::asio::awaitable<serving::Served> serve(const api::ApiRequest& request) override;
  boost::asio::awaitable<std::shared_ptr<const cache::Entry>> find_in_l1(std::string key) override;
  boost::asio::awaitable<void> erase_from_l1(std::string prefix) override;
  boost::asio::awaitable<std::vector<std::vector<serving::WidgetCost>>> upstream_costs() override;

  // serving::SiblingCaches, for the workers (while Redis is down).
  boost::asio::awaitable<std::shared_ptr<const cache::Entry>> find_copy(std::string key,
                                                                        unsigned asking) override;

 private:
  boost::asio::awaitable<std::shared_ptr<const cache::Entry>> copy_from_l1(std::string key,
                                                                           std::size_t skip);
  template <class Of>
  double sum(Of of_worker) const;

  std::vector<std::unique_ptr<Worker>> workers_;
  std::size_t next_worker_ = 0;  // control thread only
};

}  // namespace wg::process
