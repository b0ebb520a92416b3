#pragma once
// One public or admin listener: accepts connections (on its io_context, which one thread runs),
// enforces the connection cap, and drains gracefully. Plain or TLS;
// HTTP/1.1 and HTTP/2 (h2 by ALPN, h2c by its preface). Protocol rules and limits live in the
// sessions.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/http/request_handler.hpp"

namespace wg::http {

class Connection;
class OutputBudget;
class TlsServerContext;
template <class Stream>
class HttpSession;

// Counts of what the listener saw; read by metrics.
struct ServerStats {
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> rejected_over_limit{0};
  std::atomic<std::int64_t> open{0};
  std::atomic<std::uint64_t> requests{0};
  // Answers not yet fully sent (docs/listener.md, "Output budget").
  std::atomic<std::uint64_t> output_pending_bytes{0};  // what they keep alive, each owner once
  std::atomic<std::uint64_t> output_refused{0};        // requests refused past a bound
  std::atomic<std::uint64_t> output_paused{0};         // HTTP/1.1 requests that waited for room
  std::atomic<std::uint64_t> slow_readers_closed{0};   // closed below server.min_send_rate
};

class HttpServer {
 public:
  // `name` labels the listener in logs ("public", "admin"). The handler must outlive the server.
  // One thread runs `ioc` (docs/threading.md): a connection's handlers never run concurrently,
  // so sessions need no strand, and they name its executor's concrete type (executor.hpp).
  // `clock`: the sessions' time (their deadlines, the send rate, the Date field).
  HttpServer(boost::asio::io_context& ioc, std::string name, const config::ServerConfig& limits,
             RequestHandler& handler, const Clock& clock);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens now; throws std::system_error when the address cannot be used. With
  // `share_port`, the socket is bound with SO_REUSEPORT, so that several servers (one per io
  // worker) listen on the same port and the kernel spreads new connections over them.
  boost::asio::ip::tcp::endpoint bind(const config::HostPort& where, bool share_port = false);
  boost::asio::ip::tcp::endpoint bind(const boost::asio::ip::tcp::endpoint& endpoint,
                                      bool share_port);
  // TLS on this listener: every connection accepted from now on does its handshake with the
  // context's current certificate (null = plain). Call before start().
  void set_tls(std::shared_ptr<const TlsServerContext> tls) { tls_ = std::move(tls); }
  // Starts the accept loop on the io_context.
  void start();
  // Stops accepting, closes idle connections, lets in-flight requests finish (their
  // connections close after the answer), and force-closes whatever is left after `timeout`.
  // Completes when every session has ended.
  // A coroutine of Asio's default type: the process's shutdown awaits it.
  boost::asio::awaitable<void> drain(std::chrono::steady_clock::duration timeout);

  // Every HTTP/1.x connection judges its deadline by the clock now, as its timer's wake-up
  // does. The timers wait in real time (common/clock.hpp): a test that moved its ManualClock
  // calls this instead of waiting for them.
  void check_deadlines();

  const ServerStats& stats() const { return stats_; }
  // Request bodies up to this size are read and handed to the handler (default 0: any body
  // is refused with 413). Call before start().
  void set_max_body_bytes(std::size_t bytes) { max_body_bytes_ = bytes; }
  std::size_t max_body_bytes() const { return max_body_bytes_; }
  bool draining() const { return draining_.load(std::memory_order_relaxed); }

 private:
  template <class Stream>
  friend class HttpSession;
  Task<void> accept_loop();
  // Only the io thread writes the count: no atomic read-modify-write.
  void count_request() {
    stats_.requests.store(stats_.requests.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
  }
  std::vector<std::shared_ptr<Connection>> live_sessions();
  void register_session(Connection* session);
  void unregister_session(Connection* session);

  boost::asio::io_context& ioc_;
  const Clock& clock_;
  std::string name_;
  config::ServerConfig limits_;
  RequestHandler& handler_;
  boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, Executor> acceptor_;
  std::atomic<bool> draining_{false};
  std::size_t max_body_bytes_ = 0;
  ServerStats stats_;
  std::unique_ptr<OutputBudget> output_;  // answers not yet sent, on this listener
  std::mutex sessions_mutex_;
  std::unordered_set<Connection*> sessions_;
  std::shared_ptr<const TlsServerContext> tls_;
};

}  // namespace wg::http
