#include "wg-bench/load_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "wg-bench/h2_connection.hpp"
#include "wg-bench/h2_request.hpp"
#include "wg-bench/http1_connection.hpp"
#include "wg-bench/load_context.hpp"
#include "wg-bench/tls_client.hpp"

namespace wg::bench {
namespace {

namespace net = boost::asio;

constexpr std::size_t kReceiveMemoryBudget = 16 * 1024 * 1024;
constexpr std::size_t kMinReceiveBuffer = 4 * 1024;
constexpr std::size_t kMaxReceiveBuffer = 256 * 1024;
constexpr auto kHardStopGrace = std::chrono::milliseconds(500);

double micros(std::uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

// The live line: the whole run's answers so far, and the last complete second's rate and
// latency (every thread's share of it merged).
void print_progress(const RunShared& shared, const std::vector<std::unique_ptr<Worker>>& workers,
                    SteadyTime now) {
  std::size_t second = 0;
  std::vector<Worker::Published> parts;
  for (const auto& worker : workers) {
    parts.push_back(worker->published());
    second = std::max(second, parts.back().second);
  }
  SecondStats last;
  for (const auto& part : parts) {
    if (part.second == second) last.merge(part.stats);
  }
  const double elapsed = std::chrono::duration<double>(now - shared.start).count();
  const char* phase =
      now < shared.warmup_end ? "warm-up" : (now < shared.end ? "measuring" : "draining");
  std::fprintf(stderr, "\r\033[K[wg-bench] %6.1fs %-9s %10llu answers | last second: %8llu req/s",
               elapsed, phase, static_cast<unsigned long long>(shared.progress_responses.load()),
               static_cast<unsigned long long>(last.responses));
  if (shared.open_loop && second > 0) {
    // Nothing is offered past the end: what is sent then is the backlog of late requests.
    const double end = std::chrono::duration<double>(shared.end - shared.start).count();
    const double offered = shared.profile.offered_between(
        static_cast<double>(second) - 1, std::min(static_cast<double>(second), end));
    std::fprintf(stderr, " of %.0f offered", offered);
  }
  std::fprintf(
      stderr, ", p50 %.2f ms, p99 %.2f ms, %llu errors", micros(last.latency.value_at(0.5)) / 1000,
      micros(last.latency.value_at(0.99)) / 1000, static_cast<unsigned long long>(last.errors));
  if (shared.open_loop) {
    std::fprintf(stderr, ", %llu late", static_cast<unsigned long long>(last.late));
  }
  std::fflush(stderr);
}

}  // namespace

LoadProfile load_profile(const LoadSpec& load) {
  const double level =
      load.mode == LoadMode::open ? load.rate : static_cast<double>(load.connections);
  return load.ramp.empty() ? LoadProfile::constant(level) : LoadProfile::ramp(0, load.ramp);
}

LoadSpec resolve_ramp(LoadSpec load) {
  if (load.ramp.empty()) return load;
  const LoadProfile profile = LoadProfile::ramp(0, load.ramp);
  load.requests = 0;
  load.warmup = Millis{0};
  load.duration = std::chrono::duration_cast<Millis>(std::chrono::duration<double>(profile.span()));
  if (load.mode == LoadMode::closed) {
    load.connections = static_cast<unsigned>(std::ceil(profile.peak()));
  }
  return load;
}

LoadResult run_load(const LoadOptions& options, const Clock& clock) {
  if (!options.requests || options.requests->empty()) {
    throw std::invalid_argument("run_load: no requests");
  }
  const LoadSpec load = resolve_ramp(options.load);
  const unsigned threads = std::max(1u, load.threads);

  RunShared shared(options, clock);
  // Built once, before any thread runs, and only read after that.
  const bool h2 = options.protocol == Protocol::h2;
  std::optional<TlsClient> tls;
  if (options.target.tls) {
    tls.emplace(options, h2 ? "h2" : "http/1.1");
    shared.tls = &*tls;
  }
  std::optional<H2RequestTable> h2_requests;
  if (h2) {
    h2_requests.emplace(*options.requests, options.target.tls, options.target.host_header);
    shared.h2_requests = &*h2_requests;
  }
  shared.endpoint =
      net::ip::tcp::endpoint(net::ip::make_address(options.target.address), options.target.port);
  shared.profile = load_profile(load);
  shared.open_loop = load.mode == LoadMode::open;
  shared.count_mode = load.requests > 0;
  shared.budget.store(static_cast<std::int64_t>(load.requests));
  shared.total_connections = load.connections;
  shared.start = clock.steady_now();
  shared.warmup_end = shared.start + load.warmup;
  shared.end = shared.count_mode ? SteadyTime::max() : shared.warmup_end + load.duration;

  // Enough for a large page in one read, within a bound on the whole client's memory.
  shared.receive_buffer_bytes = std::clamp<std::size_t>(
      kReceiveMemoryBudget / std::max<std::size_t>(1, shared.total_connections), kMinReceiveBuffer,
      kMaxReceiveBuffer);

  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < threads; ++t) {
    // Threads start at different places in the pool so they do not send the same sequence.
    workers.push_back(std::make_unique<Worker>(shared, options.requests->size() * t / threads));
  }
  for (std::size_t c = 0; c < shared.total_connections; ++c) {
    Worker& worker = *workers[c % threads];
    ++worker.active;
    worker.connections.push_back(h2 ? make_h2_connection(worker, c)
                                    : make_http1_connection(worker, c));
  }
  const SteadyTime hard_stop_at =
      shared.count_mode ? SteadyTime::max() : shared.end + load.timeout + kHardStopGrace;
  for (auto& worker : workers) {
    worker->hard_stop_at = hard_stop_at;
    if (worker->active == 0) continue;
    for (auto& connection : worker->connections) connection->start();
    worker->start_sweeping();
  }

  std::atomic<unsigned> running{threads};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      workers[t]->ioc.run();
      running.fetch_sub(1);
    });
  }
  if (options.progress) {
    // The one place that sleeps on real time: a display refresh, not a measurement.
    while (running.load() > 0) {
      for (int i = 0; i < 20 && running.load() > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      print_progress(shared, workers, clock.steady_now());
    }
    std::fputs("\n", stderr);
  }
  for (auto& thread : pool) thread.join();

  LoadResult result;
  SteadyTime last_completion = shared.warmup_end;
  for (auto& worker : workers) {
    result.stats.merge(worker->stats);
    last_completion = std::max(last_completion, worker->last_measured_completion);
  }
  const double since_measuring =
      std::chrono::duration<double>(last_completion - shared.warmup_end).count();
  result.warmup_seconds = std::chrono::duration<double>(load.warmup).count();
  result.measured_seconds =
      shared.count_mode ? since_measuring : std::chrono::duration<double>(load.duration).count();
  result.elapsed_seconds = std::max(result.measured_seconds, since_measuring);
  if (shared.open_loop && !shared.count_mode) {
    result.intended_requests = shared.profile.offered_between(
        result.warmup_seconds, result.warmup_seconds + result.measured_seconds);
  }
  return result;
}

}  // namespace wg::bench
