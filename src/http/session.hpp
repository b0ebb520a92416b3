#pragma once
// One client connection: reads requests one after another (pipelined requests wait in the
// buffer and are answered in order), enforces the listener's limits and timeouts, hands
// well-formed requests to the handler and writes the answers. Runs on its own strand.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <optional>
#include <string>

#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/http/response.hpp"

namespace wg::http {

class HttpServer;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(HttpServer& server, boost::asio::ip::tcp::socket socket);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  // The connection's lifetime. Keeps the session alive until the connection ends.
  boost::asio::awaitable<void> run();
  // Thread-safe. An idle connection is closed now; a busy one after its current answer.
  void drain();
  // Thread-safe. Closes the socket whatever the session is doing.
  void force_close();

 private:
  // The handler's answer from the head alone, for a request whose body follows (not a
  // coroutine: GCC 12 mishandles such locals kept across co_await in the session's loop).
  std::optional<Response> answer_before_body(
      const boost::beast::http::request<boost::beast::http::string_body>& req);
  // `version`: the request's (10 or 11); a kept-alive HTTP/1.0 connection is announced.
  boost::asio::awaitable<bool> write(const Response& response, bool close, unsigned version = 11);
  // Takes the code, not a Response: GCC 12 mishandles temporaries in co_await expressions.
  // `head`: the request was HEAD, so the answer carries no body (Content-Length still does).
  // `message` "" = the code's usual words.
  boost::asio::awaitable<void> write_error_and_close(api::ErrorCode code, bool head = false,
                                                     std::string message = {});

  HttpServer& server_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  boost::asio::ip::address peer_;
  std::string head_;  // reused for every response head
  bool idle_ = true;  // waiting for the first byte of a request; touched on the strand only
};

}  // namespace wg::http
