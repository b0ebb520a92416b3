#include "bench/load_runner.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "bench/response_reader.hpp"
#include "bench/schedule.hpp"

namespace wg::bench {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

constexpr std::size_t kReceiveMemoryBudget = 16 * 1024 * 1024;
constexpr std::size_t kMinReceiveBuffer = 4 * 1024;
constexpr std::size_t kMaxReceiveBuffer = 256 * 1024;
constexpr auto kSweepInterval = std::chrono::milliseconds(20);
constexpr auto kReconnectPause = std::chrono::milliseconds(50);
constexpr auto kHardStopGrace = std::chrono::milliseconds(500);
constexpr auto kLateThreshold = std::chrono::milliseconds(1);

// Read-only after start, except the atomics.
struct Shared {
  Shared(const LoadOptions& o, const Clock& c) : options(o), clock(c) {}
  const LoadOptions& options;
  const Clock& clock;
  tcp::endpoint endpoint;
  SteadyTime start;
  SteadyTime warmup_end;
  SteadyTime end;  // SteadyTime::max() in count mode
  bool count_mode = false;
  std::size_t total_connections = 0;
  std::size_t receive_buffer_bytes = kMaxReceiveBuffer;
  std::atomic<std::int64_t> budget{0};  // count mode: measured requests still to claim
  std::atomic<std::uint64_t> progress_responses{0};
  std::atomic<std::uint64_t> progress_errors{0};
};

class Connection;

// One io thread's state; only touched from that thread.
struct Worker {
  explicit Worker(const Clock& c) : clock(c) {}
  const Clock& clock;
  net::io_context ioc{1};
  RunStats stats;
  std::size_t cursor = 0;
  std::size_t active = 0;
  bool hard_stopped = false;
  SteadyTime hard_stop_at = SteadyTime::max();
  SteadyTime last_measured_completion{};
  std::vector<std::unique_ptr<Connection>> connections;
  net::steady_timer sweep_timer{ioc};

  void start_sweeping();
  void sweep();
};

ErrorKind classify(const error_code& ec, bool writing) {
  if (ec == net::error::operation_aborted) return ErrorKind::timeout;
  if (ec == net::error::eof || ec == net::error::connection_reset ||
      ec == net::error::broken_pipe || ec == net::error::connection_aborted) {
    return ErrorKind::closed;
  }
  return writing ? ErrorKind::write : ErrorKind::read;
}

bool status_expected(const BenchRequest& request, unsigned status) {
  if (request.expect_success) return (status >= 200 && status < 300) || status == 304;
  return status < 500;
}

// One client connection for the whole run: a small state machine driven by completion
// handlers (no coroutine frames, no per-request allocation). Each request is one write and,
// usually, one read into the connection's own buffer. Deadlines are checked by the worker's
// sweep instead of re-arming a timer per request. Errors close the socket, are counted by kind,
// and the next request reconnects.
class Connection {
 public:
  Connection(Shared& shared, Worker& worker, std::size_t global_index)
      : shared_(shared),
        worker_(worker),
        socket_(worker.ioc),
        timer_(worker.ioc),
        receive_buffer_(shared.receive_buffer_bytes),
        open_loop_(shared.options.load.mode == LoadMode::open) {
    if (open_loop_) {
      schedule_.emplace(shared.start, shared.options.load.rate, shared.total_connections,
                        global_index);
    }
  }

  void start() { next(); }

  // The sweep: a request past its deadline is cut off (its handler then sees the abort).
  void expire_if_late(SteadyTime now) {
    if (in_flight_ && now >= deadline_) {
      timed_out_ = true;
      close_socket();
    }
  }

  // Hard stop: cut off whatever is in flight or waiting.
  void stop() {
    close_socket();
    timer_.cancel();
  }

 private:
  void next() {
    if (worker_.hard_stopped) return leave();
    const SteadyTime now = shared_.clock.steady_now();
    if (open_loop_) {
      const SteadyTime intended = schedule_->intended(j_);
      if (intended >= shared_.end) return leave();
      measured_ = intended >= shared_.warmup_end;
      if (measured_ && shared_.count_mode && shared_.budget.fetch_sub(1) <= 0) return leave();
      started_ = intended;
      if (now < intended) {
        timer_.expires_at(intended);
        timer_.async_wait([this](const error_code&) {
          if (worker_.hard_stopped) return leave();
          send();
        });
        return;
      }
    } else {
      if (now >= shared_.end) return leave();
      measured_ = now >= shared_.warmup_end;
      if (measured_ && shared_.count_mode && shared_.budget.fetch_sub(1) <= 0) return leave();
    }
    send();
  }

  void send() {
    const auto& requests = *shared_.options.requests;
    request_ = &requests[worker_.cursor];
    worker_.cursor = worker_.cursor + 1 == requests.size() ? 0 : worker_.cursor + 1;
    if (connected_) return write();
    begin_io(shared_.clock.steady_now());
    socket_.async_connect(shared_.endpoint, [this](const error_code& ec) { on_connect(ec); });
  }

  void on_connect(const error_code& ec) {
    if (ec) {
      end_io();
      close_socket();
      worker_.stats.record_error(ErrorKind::connect, measured_);
      shared_.progress_errors.fetch_add(1, std::memory_order_relaxed);
      ++j_;
      if (open_loop_ || worker_.hard_stopped) return next();
      // Closed loop: do not spin against a refusing port.
      timer_.expires_after(kReconnectPause);
      timer_.async_wait([this](const error_code&) { next(); });
      return;
    }
    error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    connected_ = true;
    ++worker_.stats.connections_opened;
    write();
  }

  void write() {
    const SteadyTime sent = shared_.clock.steady_now();
    if (open_loop_) {
      const auto lateness = sent - started_;
      RunStats& stats = worker_.stats;
      if (lateness > kLateThreshold) ++stats.late_sends;
      const auto late_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(lateness).count();
      stats.max_lateness_ns =
          std::max<std::uint64_t>(stats.max_lateness_ns, std::max<std::int64_t>(0, late_ns));
    } else {
      started_ = sent;
    }
    begin_io(sent);
    reader_.reset(request_->head);
    net::async_write(socket_, net::buffer(request_->text),
                     [this](const error_code& ec, std::size_t) {
                       if (ec) return fail(timed_out_ ? ErrorKind::timeout : classify(ec, true));
                       read();
                     });
  }

  void read() {
    socket_.async_read_some(net::buffer(receive_buffer_),
                            [this](const error_code& ec, std::size_t n) { on_read(ec, n); });
  }

  void on_read(const error_code& ec, std::size_t n) {
    std::size_t used = 0;
    if (n > 0) used = reader_.consume(std::string_view(receive_buffer_.data(), n));
    if (!ec) {
      // Nothing is pipelined, so bytes beyond the answer mean the server misframed it.
      if (reader_.failed() || used < n) return fail(ErrorKind::parse);
      if (!reader_.done()) return read();
      return succeed();
    }
    if (ec == net::error::eof) {
      reader_.finish_on_eof();
      if (reader_.done()) return succeed();
    }
    fail(timed_out_ ? ErrorKind::timeout : classify(ec, false));
  }

  void succeed() {
    end_io();
    const SteadyTime done = shared_.clock.steady_now();
    ++j_;
    RunStats& stats = worker_.stats;
    ++stats.all_requests;
    ++stats.all_responses;
    shared_.progress_responses.fetch_add(1, std::memory_order_relaxed);
    if (measured_) {
      stats.bytes_sent += request_->text.size();
      ++stats.requests;
      ++stats.responses;
      stats.bytes_received += reader_.bytes();
      const unsigned status = reader_.status();
      ++stats.status[std::min<std::size_t>(status, stats.status.size() - 1)];
      if (!status_expected(*request_, status)) ++stats.unexpected_status;
      const auto latency = std::chrono::duration_cast<std::chrono::nanoseconds>(done - started_);
      stats.latency.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, latency.count())));
      worker_.last_measured_completion = std::max(worker_.last_measured_completion, done);
    }
    if (!reader_.keep_alive()) {
      ++stats.server_closes;
      close_socket();
    }
    next();
  }

  void fail(ErrorKind kind) {
    end_io();
    ++j_;
    if (measured_) worker_.stats.bytes_sent += request_->text.size();
    close_socket();
    worker_.stats.record_error(kind, measured_);
    shared_.progress_errors.fetch_add(1, std::memory_order_relaxed);
    next();
  }

  // Leaves the run: accounts for the open-loop requests it never sent and tells the worker.
  void leave() {
    if (open_loop_ && !shared_.count_mode) {
      const std::uint64_t from = std::max(j_, schedule_->first_at_or_after(shared_.warmup_end));
      const std::uint64_t to = schedule_->first_at_or_after(shared_.end);
      if (to > from) {  // measured attempts that never reached the wire: not in whole_run
        worker_.stats.requests += to - from;
        worker_.stats.errors[static_cast<std::size_t>(ErrorKind::unsent)] += to - from;
      }
    }
    close_socket();
    if (--worker_.active == 0) worker_.sweep_timer.cancel();
  }

  void begin_io(SteadyTime now) {
    in_flight_ = true;
    timed_out_ = false;
    deadline_ = now + shared_.options.load.timeout;
  }
  void end_io() {
    in_flight_ = false;
    timed_out_ = false;
  }

  void close_socket() {
    connected_ = false;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  Shared& shared_;
  Worker& worker_;
  tcp::socket socket_;
  net::steady_timer timer_;  // open-loop waits and reconnect pauses only
  std::vector<char> receive_buffer_;
  ResponseReader reader_;
  const bool open_loop_;
  std::optional<OpenLoopSchedule> schedule_;
  std::uint64_t j_ = 0;  // open loop: next request of this connection's schedule
  const BenchRequest* request_ = nullptr;
  SteadyTime started_{};  // what latency is measured from (open loop: the intended time)
  SteadyTime deadline_{};
  bool measured_ = false;
  bool connected_ = false;
  bool in_flight_ = false;
  bool timed_out_ = false;
};

void Worker::start_sweeping() {
  sweep_timer.expires_after(kSweepInterval);
  sweep_timer.async_wait([this](const error_code& ec) {
    if (ec || active == 0) return;
    sweep();
    start_sweeping();
  });
}

void Worker::sweep() {
  const SteadyTime now = clock.steady_now();
  if (!hard_stopped && now >= hard_stop_at) {
    hard_stopped = true;
    for (auto& connection : connections) connection->stop();
    return;
  }
  for (auto& connection : connections) connection->expire_if_late(now);
}

void print_progress(const Shared& shared, SteadyTime now, std::uint64_t& last_count,
                    SteadyTime& last_time) {
  const std::uint64_t count = shared.progress_responses.load(std::memory_order_relaxed);
  const double elapsed = std::chrono::duration<double>(now - shared.start).count();
  const double interval = std::chrono::duration<double>(now - last_time).count();
  const double rate = interval > 0 ? static_cast<double>(count - last_count) / interval : 0;
  const char* phase =
      now < shared.warmup_end ? "warm-up" : (now < shared.end ? "measuring" : "draining");
  std::fprintf(
      stderr, "\r\033[K[wg-bench] %6.1fs %-9s %10llu answers %9.0f req/s %6llu errors", elapsed,
      phase, static_cast<unsigned long long>(count), rate,
      static_cast<unsigned long long>(shared.progress_errors.load(std::memory_order_relaxed)));
  std::fflush(stderr);
  last_count = count;
  last_time = now;
}

}  // namespace

LoadResult run_load(const LoadOptions& options, const Clock& clock) {
  if (!options.requests || options.requests->empty()) {
    throw std::invalid_argument("run_load: no requests");
  }
  const auto& load = options.load;
  const unsigned threads = std::max(1u, load.threads);

  Shared shared(options, clock);
  shared.endpoint =
      tcp::endpoint(net::ip::make_address(options.target.address), options.target.port);
  shared.count_mode = load.requests > 0;
  shared.budget.store(static_cast<std::int64_t>(load.requests));
  shared.total_connections = load.connections;
  shared.start = clock.steady_now();
  shared.warmup_end = shared.start + load.warmup;
  shared.end = shared.count_mode ? SteadyTime::max() : shared.warmup_end + load.duration;

  // Enough for a large page in one read, within a bound on the whole client's memory.
  shared.receive_buffer_bytes =
      std::clamp<std::size_t>(kReceiveMemoryBudget / std::max<std::size_t>(1, load.connections),
                              kMinReceiveBuffer, kMaxReceiveBuffer);

  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < threads; ++t) {
    auto worker = std::make_unique<Worker>(clock);
    // Threads start at different places in the pool so they do not send the same sequence.
    worker->cursor = options.requests->size() * t / threads;
    workers.push_back(std::move(worker));
  }
  for (std::size_t c = 0; c < load.connections; ++c) {
    Worker& worker = *workers[c % threads];
    ++worker.active;
    worker.connections.push_back(std::make_unique<Connection>(shared, worker, c));
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
    std::uint64_t last_count = 0;
    SteadyTime last_time = shared.start;
    // The one place that sleeps on real time: a display refresh, not a measurement.
    while (running.load() > 0) {
      for (int i = 0; i < 20 && running.load() > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      print_progress(shared, clock.steady_now(), last_count, last_time);
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
  result.measured_seconds =
      shared.count_mode ? std::chrono::duration<double>(last_completion - shared.warmup_end).count()
                        : std::chrono::duration<double>(load.duration).count();
  return result;
}

}  // namespace wg::bench
