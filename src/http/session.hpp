#pragma once
// One client connection: reads requests one after another (pipelined requests wait in the
// buffer and are answered in order), enforces the listener's limits and timeouts, hands
// well-formed requests to the handler and writes the answers. Runs on its listener's one io
// thread. Over TLS the handshake comes first; HTTP/2 (ALPN h2, or the h2c preface) goes to
// H2Session.
//
// The I/O is the session's own (docs/listener.md, "The HTTP/1.1 session's I/O"): one deadline
// for the connection rather than a timer per operation; a head already in the buffer is parsed
// where it lies, without an asynchronous operation; over plain TCP an answer goes straight to
// the socket, and only a full socket makes the session wait.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "connection_deadline.hpp"
#include "file_send.hpp"
#include "head_checks.hpp"
#include "output_budget.hpp"
#include "streams.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/http/request_handler.hpp"
#include "widget_gateway/http/response.hpp"

namespace wg::http {

class HttpServer;

// What the server keeps of each open connection, to drain or close it at shutdown.
class Connection {
 public:
  virtual ~Connection() = default;
  // Thread-safe. An idle connection is closed now; a busy one after its current answer(s).
  virtual void drain() = 0;
  // Thread-safe. Closes the socket whatever the connection is doing.
  virtual void force_close() = 0;
  // A strong reference while the connection lives; null once it is ending.
  virtual std::shared_ptr<Connection> lock() = 0;
  // Thread-safe. Judges the connection's deadline by the clock now, as its timer's wake-up
  // does (HttpServer::check_deadlines).
  virtual void check_deadline() = 0;
};

template <class Stream>
class H2Session;

// One client connection over `Stream`: TcpStream (plain) or TlsStream (streams.hpp; TLS: the
// handshake comes first, and ALPN "h2" hands the connection to an HTTP/2 session). On either, a
// connection that opens with the HTTP/2 client preface is handed over too (h2c prior knowledge).
template <class Stream>
class HttpSession final : public Connection,
                          public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  // `keep`: what the stream needs alive as long as the connection (the TLS context).
  HttpSession(HttpServer& server, Stream stream, std::shared_ptr<const void> keep = nullptr);
  ~HttpSession() override;
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  // The connection's lifetime. Keeps the session alive until the connection ends.
  Task<void> run();
  void drain() override;
  void force_close() override;
  std::shared_ptr<Connection> lock() override { return this->weak_from_this().lock(); }
  void check_deadline() override;

 private:
  auto& transport() { return boost::beast::get_lowest_layer(stream_); }
  // TLS only: the handshake within header_timeout; false when it failed.
  Task<bool> handshake();
  // Serves the rest of the connection as HTTP/2; `received`: bytes already read.
  Task<void> serve_h2(std::string received);
  // The handler's answer from the head alone, for a request whose body follows (not a
  // coroutine: GCC 12 mishandles such locals kept across co_await in the session's loop).
  std::optional<Response> answer_before_body(const ScannedHead& req, const RequestHeaders& headers);
  // Waits until the listener's output budget has room again (docs/listener.md, "Output
  // budget"); false when the connection should end instead (idle_timeout passed). A drain or
  // a close ends the wait too, and the request read is answered.
  Task<bool> wait_for_room();
  // `version`: the request's (10 or 11); a kept-alive HTTP/1.0 connection is announced. The
  // caller has put what the answer keeps alive in sending_ (output_.hold), which counts in the
  // output budget until the answer is written. The client must take it at
  // server.min_send_rate; false when the connection must end.
  Task<bool> write(const Response& response, bool close, unsigned version = 11);
  // The next read into buffer_ (not a coroutine: a frame per read would be an allocation on
  // the hit path); took() commits what it read.
  Task<std::tuple<boost::system::error_code, std::size_t>> read_some();
  // After read_some: the bytes committed; its error, or beast::error::timeout when the
  // deadline passed.
  boost::system::error_code took(boost::system::error_code ec, std::size_t n);
  // Parses the head from the bytes buffered: need_more when they hold only part of it.
  boost::system::error_code parse_buffered_head(HeadParser& parser);
  // The rest of a head the buffer held only part of, read within header_timeout. Errors as
  // Beast's async_read_header gives them.
  Task<boost::system::error_code> read_rest_of_head(HeadParser& parser);
  // The same with the scanner: its answer once the bytes give one; nullopt when the client
  // went away or the deadline passed (no answer). Entered only after need_more.
  Task<std::optional<ScanResult>> scan_rest_of_head();
  // Plain TCP: from byte `sent` of head_ + body (or, with `file`, the file's first
  // body.size() bytes) on, what the socket takes now, without waiting.
  FileSendStep send_step(std::string_view body, int file, std::size_t sent);
  // Plain TCP: until the socket takes more, or `deadline` (beast::error::timeout).
  Task<boost::system::error_code> wait_for_socket_room(SteadyTime deadline);
  // The deadline passed: what the connection waits for ends now.
  void on_deadline();
  // What an operation under the deadline ended with: beast::error::timeout once the deadline
  // passed (the operation was cancelled for it), its own error otherwise.
  boost::system::error_code timed_out_or(boost::system::error_code ec) const;
  // The handler's answer to a refusal, then the connection closes. Takes the refusal, not a
  // Response: GCC 12 mishandles temporaries in co_await expressions. `head`: the request was
  // HEAD, so the answer carries no body (Content-Length still does).
  Task<void> refuse_and_close(Refusal why, bool head = false);

  HttpServer& server_;
  const Clock& clock_;
  Stream stream_;
  Executor executor_;  // the stream's, also once it moved to HTTP/2
  std::shared_ptr<const void> keep_;
  boost::beast::flat_buffer buffer_;
  boost::asio::ip::address peer_;
  std::string head_;         // reused for every response head
  bool idle_ = true;         // waiting for a request (or for room to take one); io thread only
  ConnectionOutput output_;  // answers this connection holds, against its bound and the listener's
  OutputHold sending_;       // the answer being written
  SteadyTimer room_;         // wait_for_room: expiry idle_timeout, cancelled on room
  ConnectionDeadline deadline_;  // of every read and write; cancels the socket when it passes
  const bool own_parser_;        // server.http1_parser: the scanner reads heads, not Beast
  HeadScanner scanner_;
  std::vector<HeaderLine> beast_lines_;  // the handler's view of a head Beast's parser read
  // The listener's handler for HTTP/2 requests, counting each as the HTTP/1.1 loop does.
  class CountingHandler final : public RequestHandler {
   public:
    explicit CountingHandler(HttpServer& server) : server_(server) {}
    Task<Response> handle(const Request& request) override;
    std::optional<Response> answer_before_body(const Request& request) override;
    Response refuse(Refusal why) override;

   private:
    HttpServer& server_;
  };
  std::optional<CountingHandler> h2_handler_;
  std::shared_ptr<H2Session<Stream>> h2_;  // once handed over; drain and close go there
};

using PlainSession = HttpSession<TcpStream>;
using TlsSession = HttpSession<TlsStream>;

}  // namespace wg::http
