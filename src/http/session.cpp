#include "session.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <ctime>

#include "widget_gateway/common/log.hpp"
#include "widget_gateway/http/error_response.hpp"
#include "widget_gateway/http/server.hpp"

namespace wg::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::as_tuple;
using asio::use_awaitable;

namespace {

// "Date: Sun, 22 Nov 2026 01:35:44 GMT\r\n", formatted once per second per thread.
std::string_view date_line() {
  thread_local std::time_t cached_second = 0;
  thread_local char line[64];
  thread_local std::size_t length = 0;
  std::time_t now = std::time(nullptr);
  if (now != cached_second) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    length = std::strftime(line, sizeof line, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    cached_second = now;
  }
  return {line, length};
}

// True when the buffered bytes hold a complete request line (its CRLF).
bool request_line_complete(const beast::flat_buffer& buffer, std::size_t max_target) {
  std::string_view bytes(static_cast<const char*>(buffer.data().data()), buffer.size());
  auto end = bytes.find("\r\n");
  return end != std::string_view::npos && end <= max_target + 32;
}

bool is_disconnect(const boost::system::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
         ec == beast::error::timeout || ec == asio::error::broken_pipe ||
         ec == asio::error::bad_descriptor;
}

}  // namespace

HttpSession::HttpSession(HttpServer& server, asio::ip::tcp::socket socket)
    : server_(server), stream_(std::move(socket)) {
  boost::system::error_code ec;
  auto remote = stream_.socket().remote_endpoint(ec);
  if (!ec) peer_ = remote.address();
  server_.register_session(this);
}

HttpSession::~HttpSession() {
  server_.unregister_session(this);
}

void HttpSession::drain() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->idle_) self->stream_.cancel();
  });
}

void HttpSession::force_close() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->stream_.socket().close(ignored);
  });
}

asio::awaitable<void> HttpSession::run() {
  auto self = shared_from_this();
  const config::ServerConfig& limits = server_.limits_;
  bool first_request = true;

  while (!server_.draining()) {
    // Wait for the next request's first byte: a short deadline for a new connection, the idle
    // timeout between keep-alive requests.
    if (buffer_.size() == 0) {
      idle_ = true;
      stream_.expires_after(first_request ? limits.header_timeout : limits.idle_timeout);
      auto [ec, n] =
          co_await stream_.async_read_some(buffer_.prepare(4096), as_tuple(use_awaitable));
      idle_ = false;
      if (ec) break;
      buffer_.commit(n);
    }
    idle_ = false;
    first_request = false;

    // The whole head must arrive within header_timeout (slowloris).
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    parser.body_limit(0);  // no request we serve has a body
    stream_.expires_after(limits.header_timeout);
    auto [ec, n] =
        co_await bhttp::async_read_header(stream_, buffer_, parser, as_tuple(use_awaitable));
    if (ec) {
      if (ec == bhttp::error::header_limit) {
        const bool line_complete = request_line_complete(buffer_, limits.max_target_bytes);
        co_await write_error_and_close(line_complete ? api::ErrorCode::headers_too_large
                                                     : api::ErrorCode::uri_too_long);
      } else if (ec == bhttp::error::body_limit) {
        co_await write_error_and_close(api::ErrorCode::payload_too_large);
      } else if (!is_disconnect(ec)) {
        // Unparseable head, conflicting Content-Length / Transfer-Encoding (RFC 9112 6.3):
        // answer, then close because the byte stream can no longer be trusted.
        co_await write_error_and_close(api::ErrorCode::bad_request);
      }
      break;
    }

    auto& req = parser.get();
    if (req.version() / 10 != 1) {
      co_await write_error_and_close(api::ErrorCode::http_version_not_supported);
      break;
    }
    if (req.find(bhttp::field::transfer_encoding) != req.end() && !parser.chunked()) {
      co_await write_error_and_close(api::ErrorCode::not_implemented);
      break;
    }
    if (!parser.is_done()) {
      // A chunked body follows: only an empty one is accepted.
      stream_.expires_after(limits.header_timeout);
      auto [body_ec, body_n] =
          co_await bhttp::async_read(stream_, buffer_, parser, as_tuple(use_awaitable));
      if (body_ec == bhttp::error::body_limit) {
        co_await write_error_and_close(api::ErrorCode::payload_too_large);
        break;
      }
      if (body_ec) {
        if (!is_disconnect(body_ec)) co_await write_error_and_close(api::ErrorCode::bad_request);
        break;
      }
    }
    if (req.target().size() > limits.max_target_bytes) {
      co_await write_error_and_close(api::ErrorCode::uri_too_long);
      break;
    }

    server_.stats_.requests.fetch_add(1, std::memory_order_relaxed);
    const bool keep_alive = req.keep_alive();
    Request request{req.method(),
                    std::string_view(req.method_string()),
                    std::string_view(req.target()),
                    req.version() > 11 ? 11u : req.version(),
                    req,
                    peer_,
                    keep_alive};
    Response response;
    try {
      response = co_await server_.handler_.handle(request);
    } catch (const std::exception& e) {
      log::error("handler_exception", {{"listener", server_.name_}, {"what", e.what()}});
      response =
          error_response(api::ErrorCode::upstream_error, api::Endpoint::reviews, "internal error");
      response.status = 500;
      response.close = true;
    }
    const bool close = response.close || !keep_alive || server_.draining();
    if (!co_await write(response, close) || close) break;
  }

  boost::system::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream_.socket().close(ignored);
}

asio::awaitable<bool> HttpSession::write(const Response& response, bool close) {
  head_.clear();
  head_.append("HTTP/1.1 ").append(std::to_string(response.status)).push_back(' ');
  head_.append(reason_phrase(response.status)).append("\r\n");
  head_.append(date_line());
  head_.append(response.headers);
  if (response.body_mode != BodyMode::none) {
    head_.append("Content-Length: ").append(std::to_string(response.body.size())).append("\r\n");
  }
  if (close) head_.append("Connection: close\r\n");
  head_.append("\r\n");

  std::array<asio::const_buffer, 2> buffers{
      asio::buffer(head_),
      response.body_mode == BodyMode::send ? asio::buffer(response.body) : asio::const_buffer{}};
  stream_.expires_after(server_.limits_.idle_timeout);
  auto [ec, n] = co_await asio::async_write(stream_, buffers, as_tuple(use_awaitable));
  co_return !ec;
}

asio::awaitable<void> HttpSession::write_error_and_close(api::ErrorCode code) {
  const Response response = error_response(code);
  co_await write(response, true);
}

}  // namespace wg::http
