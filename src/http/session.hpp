#pragma once
// One client connection: reads requests one after another (pipelined requests wait in the
// buffer and are answered in order), enforces the listener's limits and timeouts, hands
// well-formed requests to the handler and writes the answers. Runs on its own strand. Over TLS
// the handshake comes first; HTTP/2 (ALPN h2, or the h2c preface) goes to H2Session.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "head_checks.hpp"
#include "output_budget.hpp"
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
};

template <class Stream>
class H2Session;

// One client connection over `Stream`: boost::beast::tcp_stream (plain) or
// boost::beast::ssl_stream<tcp_stream> (TLS: the handshake comes first, and ALPN "h2" hands
// the connection to an HTTP/2 session). On either, a connection that opens with the HTTP/2
// client preface is handed over too (h2c prior knowledge).
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
  boost::asio::awaitable<void> run();
  void drain() override;
  void force_close() override;
  std::shared_ptr<Connection> lock() override { return this->weak_from_this().lock(); }

 private:
  auto& transport() { return boost::beast::get_lowest_layer(stream_); }
  // TLS only: the handshake within header_timeout; false when it failed.
  boost::asio::awaitable<bool> handshake();
  // Serves the rest of the connection as HTTP/2; `received`: bytes already read.
  boost::asio::awaitable<void> serve_h2(std::string received);
  // The handler's answer from the head alone, for a request whose body follows (not a
  // coroutine: GCC 12 mishandles such locals kept across co_await in the session's loop).
  std::optional<Response> answer_before_body(const HeadRequest& req);
  // Waits until the listener's output budget has room again (docs/listener.md, "Output
  // budget"); false when the connection should end instead (idle_timeout passed). A drain or
  // a close ends the wait too, and the request read is answered.
  boost::asio::awaitable<bool> wait_for_room();
  // `version`: the request's (10 or 11); a kept-alive HTTP/1.0 connection is announced. The
  // caller has put what the answer keeps alive in sending_ (output_.hold), which counts in the
  // output budget until the answer is written. The client must take it at
  // server.min_send_rate; false when the connection must end.
  boost::asio::awaitable<bool> write(const Response& response, bool close, unsigned version = 11);
  // Plain TCP, a body in a file: from byte `sent` of head_ + the file's first `length` bytes
  // on, what the socket takes once it has room (waiting until `deadline` at most); the bytes
  // sent, or an error (beast::error::timeout when the deadline passed).
  boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> send_from_file(
      int file, std::size_t length, std::size_t sent,
      std::chrono::steady_clock::time_point deadline);
  // The handler's answer to a refusal, then the connection closes. Takes the refusal, not a
  // Response: GCC 12 mishandles temporaries in co_await expressions. `head`: the request was
  // HEAD, so the answer carries no body (Content-Length still does).
  boost::asio::awaitable<void> refuse_and_close(Refusal why, bool head = false);

  HttpServer& server_;
  Stream stream_;
  boost::asio::any_io_executor executor_;  // the stream's, also once it moved to HTTP/2
  std::shared_ptr<const void> keep_;
  boost::beast::flat_buffer buffer_;
  boost::asio::ip::address peer_;
  std::string head_;         // reused for every response head
  bool idle_ = true;         // waiting for a request (or for room to take one); strand only
  ConnectionOutput output_;  // answers this connection holds, against its bound and the listener's
  OutputHold sending_;       // the answer being written
  boost::asio::steady_timer room_;  // wait_for_room: expiry idle_timeout, cancelled on room
  // send_from_file: the send deadline while it waits for the socket to take more. The socket
  // wait it ends is known by its number, so that a late expiry ends no other wait.
  boost::asio::steady_timer send_wait_;
  std::uint64_t send_waits_ = 0;
  bool send_waiting_ = false;
  bool send_timed_out_ = false;
  // The listener's handler for HTTP/2 requests, counting each as the HTTP/1.1 loop does.
  class CountingHandler final : public RequestHandler {
   public:
    explicit CountingHandler(HttpServer& server) : server_(server) {}
    boost::asio::awaitable<Response> handle(const Request& request) override;
    std::optional<Response> answer_before_body(const Request& request) override;
    Response refuse(Refusal why) override;

   private:
    HttpServer& server_;
  };
  std::optional<CountingHandler> h2_handler_;
  std::shared_ptr<H2Session<Stream>> h2_;  // once handed over; drain and close go there
};

using PlainSession = HttpSession<boost::beast::tcp_stream>;
using TlsSession = HttpSession<boost::beast::ssl_stream<boost::beast::tcp_stream>>;

}  // namespace wg::http
