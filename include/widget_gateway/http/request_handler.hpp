#pragma once
// The seam between the HTTP protocol layer (sessions, limits, timeouts) and what a listener
// serves. Sessions decide themselves which requests they refuse (malformed, over a limit) and
// ask the handler only how to word the refusal; a handler is handed only requests that parsed
// and passed the listener's limits.

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/verb.hpp>
#include <optional>
#include <string_view>

#include "widget_gateway/http/executor.hpp"
#include "widget_gateway/http/refusal.hpp"
#include "widget_gateway/http/request_headers.hpp"
#include "widget_gateway/http/response.hpp"

namespace wg::http {

struct Request {
  boost::beast::http::verb method;
  std::string_view method_text;
  std::string_view target;
  unsigned version;  // 10 or 11 (HTTP/1.2+ is treated as 1.1)
  RequestHeaders headers;
  boost::asio::ip::address peer;  // the TCP peer, before any X-Forwarded-For
  bool keep_alive;
  std::string_view body = {};  // empty unless the listener accepts bodies (admin)
  bool sends_files = false;    // the session sends Response::body_file (plain HTTP/1.x)

  bool is_head() const { return method == boost::beast::http::verb::head; }
};

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Runs on the connection's io thread, as a coroutine of the listener's executor type
  // (executor.hpp). Must not throw for anything a client can send.
  virtual Task<Response> handle(const Request& request) = 0;
  // Asked when a body follows the head, before any of it is read or held against the body
  // limit: an answer the head alone decides (405 for a method the route never takes), which
  // the session sends before closing; nullopt to go on as usual.
  virtual std::optional<Response> answer_before_body(const Request& request) {
    (void)request;
    return std::nullopt;
  }
  // The listener's answer to a request the session refuses (`why`), in its own vocabulary.
  // The session adds Date, Content-Length and Connection, withholds the body of a HEAD, and
  // decides whether the connection survives. Runs on the connection's io thread; must not throw.
  virtual Response refuse(Refusal why) = 0;
};

}  // namespace wg::http
