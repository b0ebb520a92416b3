#pragma once
// Inside the load runner (load_runner.hpp): what a run's connections share, one io thread's
// state, the pacing every kind of connection asks before each request, and the one place
// where attempts are recorded. Connection kinds (HTTP/1.1, HTTP/2; plain or TLS) differ only
// in how they move bytes.
//
// Threads: RunShared is read-only once the run starts, except its atomics. A Worker and
// everything it owns (connections, stats) is touched only by its own io thread, except
// `published`, the last complete second handed to the progress line under its mutex.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "wg-bench/load_profile.hpp"
#include "wg-bench/load_runner.hpp"
#include "wg-bench/run_stats.hpp"
#include "wg-bench/schedule.hpp"

namespace wg::bench {

class TlsClient;       // tls_client.hpp
class H2RequestTable;  // h2_request.hpp

inline constexpr auto kLateThreshold = std::chrono::milliseconds(1);
// Closed loop: how long a connection waits after a failed connect, so as not to spin against a
// refusing port.
inline constexpr auto kReconnectPause = std::chrono::milliseconds(50);

struct RunShared {
  RunShared(const LoadOptions& o, const Clock& c) : options(o), clock(c) {}
  const LoadOptions& options;
  const Clock& clock;
  boost::asio::ip::tcp::endpoint endpoint;
  LoadProfile profile;  // open loop: requests/s; closed loop: connections allowed to send
  SteadyTime start;
  SteadyTime warmup_end;
  SteadyTime end;  // SteadyTime::max() in count mode
  bool count_mode = false;
  bool open_loop = false;
  std::size_t total_connections = 0;
  std::size_t receive_buffer_bytes = 0;
  std::atomic<std::int64_t> budget{0};  // count mode: measured requests still to claim
  std::atomic<std::uint64_t> progress_responses{0};
  std::atomic<std::uint64_t> progress_errors{0};

  TlsClient* tls = nullptr;                     // https targets: the run's one TLS context
  const H2RequestTable* h2_requests = nullptr;  // HTTP/2: the pool as header lists
};

// One request on its way: what it is, what latency is measured from (open loop: its intended
// time, so a stall shows in every request queued behind it; closed loop: when it was sent),
// and whether it falls in the measured period.
struct Attempt {
  const BenchRequest* request = nullptr;
  SteadyTime started{};
  bool measured = false;
};

// What a sender does next.
struct Turn {
  enum class Kind {
    send,   // send at `at` (now or later: wait, then send without asking again)
    retry,  // nothing to send before `at` (a ramp not yet at this connection): ask again then
    leave,  // the run is over for this sender
  };
  Kind kind = Kind::leave;
  SteadyTime at{};
  bool measured = false;
};

// The pacing of one connection: the open-loop schedule, the closed-loop ramp, the run's end and
// the count-mode budget, decided in one place for every connection kind.
class Pacing {
 public:
  Pacing(RunShared& shared, std::size_t connection_index);

  Turn next(SteadyTime now);
  // Open loop, on leaving: the measured requests of this connection's schedule it never claimed.
  std::uint64_t unsent_on_leave() const;

 private:
  RunShared& shared_;
  std::size_t index_;
  std::optional<OpenLoopSchedule> schedule_;
  std::uint64_t j_ = 0;  // open loop: the next request of the schedule
};

class ClientConnection {
 public:
  virtual ~ClientConnection() = default;
  virtual void start() = 0;
  // The sweep: cut off whatever is past its deadline (the handlers then count a timeout).
  virtual void expire_if_late(SteadyTime now) = 0;
  // The hard stop: cut off everything in flight or waiting.
  virtual void stop() = 0;
};

// One io thread's state; only touched from that thread (except `published`).
class Worker {
 public:
  Worker(RunShared& shared, std::size_t first_request);

  RunShared& shared;
  boost::asio::io_context ioc{1};
  RunStats stats;
  std::size_t active = 0;  // connections still in the run
  bool hard_stopped = false;
  SteadyTime hard_stop_at = SteadyTime::max();
  SteadyTime last_measured_completion{};
  std::vector<std::unique_ptr<ClientConnection>> connections;

  // The next request of the pool (each thread cycles from its own starting point).
  const BenchRequest& next_request();

  // Recording, the only place that touches stats while the run goes.
  void note_sent(const Attempt& attempt, SteadyTime sent);
  void record_answer(const Attempt& attempt, SteadyTime done, unsigned status,
                     std::uint64_t bytes_received);
  void record_failure(const Attempt& attempt, ErrorKind kind, SteadyTime now);
  void record_unsent(std::uint64_t n) { stats.record_unsent(n); }
  void connection_opened() { ++stats.connections_opened; }
  void server_closed() { ++stats.server_closes; }
  // A connection is done with the run.
  void leave();

  void start_sweeping();

  // The last complete second of this thread's series, for the progress line.
  struct Published {
    std::size_t second = 0;  // index + 1; 0 = nothing yet
    SecondStats stats;
  };
  Published published() const;

 private:
  void sweep();
  void publish(SteadyTime now);

  std::size_t cursor_;
  boost::asio::steady_timer sweep_timer_{ioc};
  mutable std::mutex published_mutex_;
  Published published_;
};

bool status_expected(const BenchRequest& request, unsigned status);

}  // namespace wg::bench
