#include "bench/load_runner.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <list>
#include <memory>
#include <optional>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include "bench/schedule.hpp"

namespace wg::bench {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
constexpr auto kAwait = net::as_tuple(net::use_awaitable);

constexpr std::uint64_t kMaxBodyBytes = 256ull * 1024 * 1024;
constexpr std::uint32_t kMaxHeaderBytes = 64 * 1024;
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
  std::atomic<std::int64_t> budget{0};  // count mode: measured requests still to claim
  std::atomic<std::uint64_t> progress_responses{0};
  std::atomic<std::uint64_t> progress_errors{0};
};

// Handles a hard stop needs to reach; registered while a connection lives.
struct ConnectionHandles {
  beast::tcp_stream* stream;
  net::steady_timer* timer;
};

// One io thread's state; only touched from that thread.
struct Worker {
  net::io_context ioc{1};
  RunStats stats;
  std::size_t cursor = 0;
  std::size_t active = 0;
  bool hard_stopped = false;
  std::list<ConnectionHandles> live;
  // Where answer bodies are parsed into and dropped. One per thread is enough: the parser
  // copies into it on this thread, one answer at a time, and nobody reads it.
  std::vector<char> scratch = std::vector<char>(64 * 1024);
  std::optional<net::steady_timer> hard_stop_timer;
  SteadyTime last_measured_completion{};
};

struct Exchange {
  bool ok = false;
  ErrorKind error = ErrorKind::read;
  unsigned status = 0;
  bool keep_alive = false;
  std::uint64_t received = 0;
};

ErrorKind classify(const error_code& ec, bool writing) {
  if (ec == beast::error::timeout || ec == net::error::operation_aborted) return ErrorKind::timeout;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == net::error::eof || ec == net::error::connection_reset ||
      ec == net::error::broken_pipe || ec == net::error::connection_aborted) {
    return ErrorKind::closed;
  }
  if (writing) return ErrorKind::write;
  if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
    return ErrorKind::parse;
  }
  return ErrorKind::read;
}

// Writes one request and reads its answer. The stream's deadline covers the whole exchange.
// Runs on the connection's io_context; cancelled by closing the stream.
net::awaitable<Exchange> exchange(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                  const BenchRequest& request, std::vector<char>& scratch,
                                  std::chrono::milliseconds timeout) {
  Exchange out;
  stream.expires_after(timeout);
  auto [write_ec, written] = co_await net::async_write(stream, net::buffer(request.text), kAwait);
  if (write_ec) {
    out.error = classify(write_ec, true);
    co_return out;
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(kMaxBodyBytes);
  parser.header_limit(kMaxHeaderBytes);
  if (request.head) parser.skip(true);  // a HEAD answer has a Content-Length but no body
  auto [head_ec, head_bytes] = co_await http::async_read_header(stream, buffer, parser, kAwait);
  if (head_ec) {
    out.error = classify(head_ec, false);
    co_return out;
  }
  out.received += head_bytes;
  while (!parser.is_done()) {
    parser.get().body().data = scratch.data();
    parser.get().body().size = scratch.size();
    auto [body_ec, body_bytes] = co_await http::async_read(stream, buffer, parser, kAwait);
    out.received += body_bytes;
    if (body_ec == http::error::need_buffer) continue;
    if (body_ec) {
      out.error = classify(body_ec, false);
      co_return out;
    }
  }
  out.ok = true;
  out.status = parser.get().result_int();
  out.keep_alive = parser.get().keep_alive();
  co_return out;
}

void close_stream(beast::tcp_stream& stream) {
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream.socket().close(ignored);
}

bool status_expected(const BenchRequest& request, unsigned status) {
  if (request.expect_success) return (status >= 200 && status < 300) || status == 304;
  return status < 500;
}

// One connection for the whole run. Owns its stream and timer; registered in worker.live so a
// hard stop can close them. Leaves when the run ends or on hard stop.
net::awaitable<void> run_connection(Shared& shared, Worker& worker, std::size_t global_index) {
  auto executor = co_await net::this_coro::executor;
  const auto& options = shared.options;
  const auto& requests = *options.requests;
  const auto timeout = options.load.timeout;
  const bool open_loop = options.load.mode == LoadMode::open;
  RunStats& stats = worker.stats;

  beast::tcp_stream stream(executor);
  net::steady_timer timer(executor);
  const auto handle = worker.live.insert(worker.live.end(), ConnectionHandles{&stream, &timer});
  beast::flat_buffer buffer;
  bool connected = false;

  std::optional<OpenLoopSchedule> schedule;
  if (open_loop) {
    schedule.emplace(shared.start, options.load.rate, shared.total_connections, global_index);
  }
  std::uint64_t j = 0;  // open loop: next request of this connection's schedule

  while (!worker.hard_stopped) {
    SteadyTime started{};
    bool measured = false;
    if (open_loop) {
      const SteadyTime intended = schedule->intended(j);
      if (intended >= shared.end) break;
      measured = intended >= shared.warmup_end;
      if (measured && shared.count_mode && shared.budget.fetch_sub(1) <= 0) break;
      if (shared.clock.steady_now() < intended) {
        timer.expires_at(intended);
        co_await timer.async_wait(kAwait);
        if (worker.hard_stopped) break;
      }
      started = intended;
    } else {
      const SteadyTime now = shared.clock.steady_now();
      if (now >= shared.end) break;
      measured = now >= shared.warmup_end;
      if (measured && shared.count_mode && shared.budget.fetch_sub(1) <= 0) break;
    }
    const BenchRequest& request = requests[worker.cursor];
    worker.cursor = worker.cursor + 1 == requests.size() ? 0 : worker.cursor + 1;

    if (!connected) {
      stream.expires_after(timeout);
      auto [connect_ec] = co_await stream.async_connect(shared.endpoint, kAwait);
      if (connect_ec) {
        close_stream(stream);
        stats.record_error(ErrorKind::connect, measured);
        shared.progress_errors.fetch_add(1, std::memory_order_relaxed);
        ++j;
        if (!open_loop && !worker.hard_stopped) {  // do not spin against a refusing port
          timer.expires_after(kReconnectPause);
          co_await timer.async_wait(kAwait);
        }
        continue;
      }
      error_code ignored;
      stream.socket().set_option(tcp::no_delay(true), ignored);
      buffer.clear();
      connected = true;
      ++stats.connections_opened;
    }

    const SteadyTime sent = shared.clock.steady_now();
    if (open_loop) {
      const auto lateness = sent - started;
      if (lateness > kLateThreshold) ++stats.late_sends;
      stats.max_lateness_ns = std::max<std::uint64_t>(
          stats.max_lateness_ns,
          std::max<std::int64_t>(
              0, std::chrono::duration_cast<std::chrono::nanoseconds>(lateness).count()));
    } else {
      started = sent;
    }

    const Exchange result = co_await exchange(stream, buffer, request, worker.scratch, timeout);
    const SteadyTime done = shared.clock.steady_now();
    ++j;
    stats.bytes_sent += measured ? request.text.size() : 0;
    if (!result.ok) {
      close_stream(stream);
      connected = false;
      stats.record_error(result.error, measured);
      shared.progress_errors.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    ++stats.all_requests;
    ++stats.all_responses;
    shared.progress_responses.fetch_add(1, std::memory_order_relaxed);
    if (measured) {
      ++stats.requests;
      ++stats.responses;
      stats.bytes_received += result.received;
      ++stats.status[std::min<std::size_t>(result.status, stats.status.size() - 1)];
      if (!status_expected(request, result.status)) ++stats.unexpected_status;
      const auto latency = std::chrono::duration_cast<std::chrono::nanoseconds>(done - started);
      stats.latency.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, latency.count())));
      worker.last_measured_completion = std::max(worker.last_measured_completion, done);
    }
    if (!result.keep_alive) {
      ++stats.server_closes;
      close_stream(stream);
      connected = false;
    }
  }

  // Requests this connection was meant to send in the measured period but never did.
  if (open_loop && !shared.count_mode) {
    const std::uint64_t from = std::max(j, schedule->first_at_or_after(shared.warmup_end));
    const std::uint64_t to = schedule->first_at_or_after(shared.end);
    if (to > from) {  // measured attempts that never reached the wire: not in whole_run
      stats.requests += to - from;
      stats.errors[static_cast<std::size_t>(ErrorKind::unsent)] += to - from;
    }
  }
  close_stream(stream);
  worker.live.erase(handle);
  if (--worker.active == 0 && worker.hard_stop_timer) worker.hard_stop_timer->cancel();
}

void hard_stop(Worker& worker) {
  worker.hard_stopped = true;
  for (auto& handles : worker.live) {
    close_stream(*handles.stream);
    handles.timer->cancel();
  }
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

  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < threads; ++t) {
    auto worker = std::make_unique<Worker>();
    // Threads start at different places in the pool so they do not send the same sequence.
    worker->cursor = options.requests->size() * t / threads;
    workers.push_back(std::move(worker));
  }
  for (std::size_t c = 0; c < load.connections; ++c) {
    Worker& worker = *workers[c % threads];
    ++worker.active;
    net::co_spawn(worker.ioc, run_connection(shared, worker, c), net::detached);
  }
  if (!shared.count_mode) {
    const SteadyTime hard_stop_at = shared.end + load.timeout + kHardStopGrace;
    for (auto& worker : workers) {
      if (worker->active == 0) continue;
      worker->hard_stop_timer.emplace(worker->ioc, hard_stop_at);
      worker->hard_stop_timer->async_wait([w = worker.get()](const error_code& ec) {
        if (!ec) hard_stop(*w);
      });
    }
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
