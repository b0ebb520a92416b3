#pragma once
// The gateway's only way to reach upstream: HTTP/1.1 GETs over a pool of keep-alive
// connections (plain TCP or TLS), each exchange bounded by a deadline, every failure reported
// as a wg::errc value rather than thrown.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::upstream {

struct Response {
  unsigned status = 0;
  std::string body;
  // Upstream's Retry-After value as sent (empty when absent), for callers that honour it on
  // 429/503; upstream::parse_retry_after reads it.
  std::string retry_after;
};

struct Result {
  // {} when a complete response arrived, whatever its status; otherwise one of
  // upstream_connect_failed, upstream_timeout, upstream_closed, upstream_invalid_body,
  // upstream_tls.
  std::error_code ec;
  // The socket's or TLS's own error under `ec`, when there is one (connection refused, reset
  // by peer, a certificate verify failure): what an operator needs to tell one failure from
  // another. Empty for a timeout, a failed name lookup or a bad body.
  std::error_code cause;
  Response response;
  // No byte of the request left, so upstream cannot have it: resolve, connect or the TLS
  // handshake failed, or the write failed having sent nothing. Such a request never counts
  // against the quota.
  bool nothing_sent = false;
  bool reused_connection = false;        // the answering attempt ran on a pooled connection
  std::chrono::microseconds elapsed{0};  // the whole exchange, connect included
};

// W3C Trace Context headers for one request (empty: not sent).
struct TraceHeaders {
  std::string traceparent;
  std::string tracestate;
};

class Client {
 public:
  // Throws std::invalid_argument for a bad base_url or an unreadable ca_file (start-up
  // failure). Connections are created on strands of `ex`. `clock` must outlive the Client.
  Client(boost::asio::any_io_executor ex, const config::UpstreamConfig& config, Clock& clock);
  // Closes pooled connections. Only after every get() has finished (the owner's duty).
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // GET <base path><path_and_query>; `path_and_query` starts with '/', e.g.
  // "/api/v1/widgets/widget/ID/remote". Thread-safe: may run on many strands and threads at
  // once. Resumes on the caller's executor. Bounded by connect_timeout (resolve, connect, TLS
  // handshake) plus timeout (write + read).
  //
  // A request is never sent twice: once any byte of it has left, upstream may have it. So get()
  // retries at most once, on a fresh connection, and only when a pooled connection was found
  // dead before the request could leave: the idle check saw it closed, or the write on it
  // failed having transferred zero bytes. A write that failed after sending anything, a write
  // deadline and every read failure are final.
  boost::asio::awaitable<Result> get(std::string path_and_query);
  // The same with the request's traceparent and tracestate, sent as given. `trace` must
  // outlive the call. (An overload, not a defaulted argument: GCC 12 destroys a defaulted
  // temporary of a coroutine call twice.)
  boost::asio::awaitable<Result> get(std::string path_and_query, const TraceHeaders& trace);

  // Drops pooled idle connections (shutdown, tests). Safe at any time.
  void close_idle();

  struct Stats {
    std::uint64_t connections_opened = 0;
    std::uint64_t requests_sent = 0;
    std::uint64_t reuses = 0;   // requests sent on a pooled connection
    std::uint64_t retries = 0;  // gets that fell back after finding a pooled connection closed
  };
  Stats stats() const;
  // "host:port" of upstream, as the events name it.
  const std::string& authority() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wg::upstream
