#include "session.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <ctime>
#include <limits>
#include <optional>

#include "file_send.hpp"
#include "h2_session.hpp"
#include "head_checks.hpp"
#include "http_date.hpp"
#include "response_head.hpp"
#include "send_progress.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/http/server.hpp"
#include "widget_gateway/http/tls_server_context.hpp"

namespace wg::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::as_tuple;

namespace {

template <class Stream>
constexpr bool kTls = !std::is_same_v<Stream, TcpStream>;

// How long a TLS connection that ends waits for the client's close_notify after sending its own.
constexpr std::chrono::seconds kTlsCloseWait{1};
// What the first read of a request asks for: a head or several pipelined ones.
constexpr std::size_t kFirstRead = 4096;

bool is_disconnect(const boost::system::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
         ec == beast::error::timeout || ec == asio::error::broken_pipe ||
         ec == asio::error::bad_descriptor;
}

// What Beast's reading of a head ended with, in the scanner's terms; nullopt when the client
// went away or the deadline passed (no answer).
std::optional<ScanResult> verdict_of(const boost::system::error_code& ec) {
  if (!ec) return ScanResult::complete;
  if (ec == bhttp::error::header_limit) return ScanResult::header_limit;
  if (ec == bhttp::error::bad_version) return ScanResult::bad_version;
  if (is_disconnect(ec)) return std::nullopt;
  return ScanResult::malformed;
}

}  // namespace

template <class Stream>
HttpSession<Stream>::HttpSession(HttpServer& server, Stream stream,
                                 std::shared_ptr<const void> keep)
    : server_(server),
      clock_(server.clock_),
      stream_(std::move(stream)),
      executor_(stream_.get_executor()),
      keep_(std::move(keep)),
      output_(*server.output_, server.limits_.max_pending_output_bytes_per_connection),
      room_(executor_),
      deadline_(executor_, clock_, [this] { on_deadline(); }),
      own_parser_(server.limits_.http1_parser != "beast"),
      scanner_(server.limits_.max_header_bytes) {
  boost::system::error_code ec;
  auto remote = transport().socket().remote_endpoint(ec);
  if (!ec) peer_ = remote.address();
  server_.register_session(this);
}

template <class Stream>
HttpSession<Stream>::~HttpSession() {
  server_.unregister_session(this);
}

template <class Stream>
void HttpSession<Stream>::drain() {
  asio::post(executor_, [self = this->shared_from_this()] {
    if (self->h2_) {
      self->h2_->drain();
    } else if (self->idle_) {
      self->transport().cancel();
      self->room_.cancel();
    }
  });
}

template <class Stream>
void HttpSession<Stream>::check_deadline() {
  asio::post(executor_, [self = this->shared_from_this()] {
    if (self->h2_) {
      self->h2_->check_deadline();
    } else {
      self->deadline_.check();
    }
  });
}

template <class Stream>
boost::system::error_code HttpSession<Stream>::timed_out_or(boost::system::error_code ec) const {
  return deadline_.passed() ? boost::system::error_code(beast::error::timeout) : ec;
}

template <class Stream>
void HttpSession<Stream>::on_deadline() {
  boost::system::error_code ignored;
  transport().socket().cancel(ignored);
}

template <class Stream>
void HttpSession<Stream>::force_close() {
  asio::post(executor_, [self = this->shared_from_this()] {
    if (self->h2_) return self->h2_->force_close();
    boost::system::error_code ignored;
    self->transport().socket().close(ignored);
    self->room_.cancel();
  });
}

template <class Stream>
Task<bool> HttpSession<Stream>::handshake() {
  if constexpr (kTls<Stream>) {
    deadline_.set_after(server_.limits_.header_timeout);
    auto [ec] =
        co_await stream_.async_handshake(asio::ssl::stream_base::server, as_tuple(use_task));
    co_return !timed_out_or(ec);
  } else {
    co_return true;
  }
}

template <class Stream>
Task<Response> HttpSession<Stream>::CountingHandler::handle(const Request& request) {
  server_.count_request();
  return server_.handler_.handle(request);
}

template <class Stream>
std::optional<Response> HttpSession<Stream>::CountingHandler::answer_before_body(
    const Request& request) {
  return server_.handler_.answer_before_body(request);
}

template <class Stream>
Response HttpSession<Stream>::CountingHandler::refuse(Refusal why) {
  return server_.handler_.refuse(why);
}

template <class Stream>
Task<void> HttpSession<Stream>::serve_h2(std::string received) {
  const config::ServerConfig& limits = server_.limits_;
  H2Settings settings;
  settings.max_concurrent_streams = limits.h2_max_concurrent_streams;
  settings.max_header_bytes = limits.max_header_bytes;
  settings.max_target_bytes = limits.max_target_bytes;
  settings.header_timeout = limits.header_timeout;
  settings.idle_timeout = limits.idle_timeout;
  settings.max_pending_output_bytes = limits.max_pending_output_bytes_per_connection;
  settings.min_send_rate = limits.min_send_rate;
  settings.send_rate_interval = limits.send_rate_interval;
  settings.clock = &clock_;
  h2_handler_.emplace(server_);
  deadline_.stop();  // the HTTP/2 session keeps its own time
  h2_ = std::make_shared<H2Session<Stream>>(std::move(stream_), *h2_handler_, settings,
                                            *server_.output_, peer_, std::move(received));
  std::shared_ptr<H2Session<Stream>> h2 = h2_;
  co_await h2->run();
}

template <class Stream>
Task<void> HttpSession<Stream>::run() {
  auto self = this->shared_from_this();
  const config::ServerConfig& limits = server_.limits_;
  bool first_request = true;
  bool version_rewritten = false;  // the current request line said HTTP/1.x, x > 1

  if (!co_await handshake()) {
    boost::system::error_code ignored;
    transport().socket().close(ignored);
    co_return;
  }
  if constexpr (kTls<Stream>) {
    if (negotiated_protocol(stream_.native_handle()) == AppProtocol::h2) {
      co_await serve_h2({});
      co_return;
    }
  }

  while (!server_.draining()) {
    // Wait for the next request's first byte: a short deadline for a new connection, the idle
    // timeout between keep-alive requests.
    if (buffer_.size() == 0) {
      idle_ = true;
      deadline_.set_after(first_request ? limits.header_timeout : limits.idle_timeout);
      auto [read_ec, n] = co_await read_some();
      idle_ = false;
      if (took(read_ec, n)) break;
      if (first_request && starts_h2_preface(buffered(buffer_))) {
        // HTTP/2 with prior knowledge (h2c): no HTTP/1.x request starts with "PRI * HTTP/2".
        std::string received(buffered(buffer_));
        buffer_.consume(buffer_.size());
        co_await serve_h2(std::move(received));
        co_return;
      }
    }
    idle_ = false;
    first_request = false;

    // The whole head must arrive within header_timeout (slowloris). The session's scanner
    // reads it, or Beast's parser: with server.http1_parser = "beast", and for a request with
    // a body, which Beast reads (docs/listener.md, "The request-head scanner").
    std::optional<HeadParser> parser;
    std::optional<ScanResult> verdict;  // nullopt: the client went away, or the deadline passed
    if (own_parser_) {
      scanner_.reset();
      verdict = scanner_.scan(buffered(buffer_));
      if (verdict == ScanResult::need_more) verdict = co_await scan_rest_of_head();
      if (verdict.has_value()) buffer_.consume(scanner_.skipped());
    }
    if (!own_parser_ || (verdict == ScanResult::complete && scanner_.head().body())) {
      skip_empty_lines(buffer_);
      parser.emplace();
      parser->header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
      // No request we serve has a body, but Content-Length is checked after the head (below):
      // a body_limit error here would come before the Transfer-Encoding + Content-Length check.
      parser->body_limit(std::numeric_limits<std::uint64_t>::max());
      boost::system::error_code ec = parse_buffered_head(*parser);
      if (ec == bhttp::error::need_more) ec = co_await read_rest_of_head(*parser);
      verdict = verdict_of(ec);
    }
    if (verdict != ScanResult::complete) {
      if (!verdict.has_value()) break;
      const std::size_t target =
          parser.has_value() ? parser->get().target().size() : scanner_.parsed_target_size();
      if (*verdict == ScanResult::header_limit) {
        const bool line = request_line_too_long(target, buffered(buffer_), limits.max_target_bytes);
        co_await refuse_and_close(line ? Refusal::target_too_long : Refusal::head_too_large);
      } else if (char* major =
                     *verdict == ScanResult::bad_version ? other_version(buffer_) : nullptr) {
        if (*major == '1' && !version_rewritten) {
          // HTTP/1.2 and later 1.x are served as 1.1 (RFC 9112 2.3): read the head again
          // with the minor digit rewritten.
          major[2] = '1';
          version_rewritten = true;
          continue;
        }
        const bool head = buffered(buffer_).starts_with("HEAD ");
        co_await refuse_and_close(Refusal::version, head);
      } else {
        // Unparseable head, conflicting Content-Length / Transfer-Encoding (RFC 9112 6.3):
        // answer, then close because the byte stream can no longer be trusted.
        co_await refuse_and_close(Refusal::malformed);
      }
      break;
    }

    version_rewritten = false;
    const ScannedHead req = parser.has_value() ? scanned_from(*parser) : scanner_.head();
    if (parser.has_value()) header_lines(parser->get(), beast_lines_);
    const RequestHeaders headers =
        parser.has_value() ? RequestHeaders(beast_lines_) : scanner_.headers();
    const bool head = req.method == bhttp::verb::head;
    if (auto refusal = refuse_head(req, headers, limits.max_target_bytes)) {
      co_await refuse_and_close(*refusal, head);
      break;
    }
    if (req.method == bhttp::verb::connect) {
      // No tunnels. Closed afterwards: the client may already be sending tunnel bytes (a TLS
      // ClientHello) that must not be parsed as HTTP.
      co_await refuse_and_close(Refusal::tunnel, head);
      break;
    }
    // A body follows: what the head alone decides (405) comes before any body limit. The body
    // stays unread, so the connection closes after the answer.
    std::optional<Response> early;
    if (req.body()) early = answer_before_body(req, headers);
    if (early.has_value()) {
      sending_ = output_.hold(*early);
      co_await write(*early, true, req.version);
      break;
    }
    // Bodies are refused (413) except on a listener that takes them (admin), up to its limit.
    const std::size_t max_body = server_.max_body_bytes();
    if (req.content_length.value_or(0) > max_body) {
      co_await refuse_and_close(Refusal::body_too_large, head);
      break;
    }
    if (req.body()) {
      // The body follows (Content-Length within the limit, or chunked): Beast's parser read
      // the head, and reads the body.
      parser->body_limit(max_body);
      deadline_.set_after(limits.header_timeout);
      auto [body_ec, body_n] =
          co_await bhttp::async_read(stream_, buffer_, *parser, as_tuple(use_task));
      body_ec = timed_out_or(body_ec);
      if (body_ec == bhttp::error::body_limit) {
        co_await refuse_and_close(Refusal::body_too_large);
        break;
      }
      if (body_ec) {
        if (!is_disconnect(body_ec)) co_await refuse_and_close(Refusal::malformed);
        break;
      }
    }

    // Past the listener's output budget the request waits before its handler (and the next
    // pipelined one stays unread) until answers held for other clients have gone out, or gone
    // with their slow readers.
    deadline_.clear();  // the room's wait and the handler keep their own time
    if (!output_.takes_new_work()) {
      const bool room = co_await wait_for_room();
      if (!room) break;
    }
    server_.count_request();
    const bool keep_alive = req.keep_alive;
    Request request{
        req.method,
        req.method_text,
        req.target,
        req.version,
        headers,
        peer_,
        keep_alive,
        parser.has_value() ? std::string_view(parser->get().body()) : std::string_view(),
        !kTls<Stream>};
    Response response;
    try {
      response = co_await server_.handler_.handle(request);
    } catch (const std::exception& e) {
      log::error("handler_exception", {{"listener", server_.name_}, {"what", e.what()}});
      response = server_.handler_.refuse(Refusal::handler_failed);
      response.close = true;
    }
    if (!output_.admits(response)) {
      // Other answers filled the output budget while the handler ran: this one would cross it.
      output_.budget().count_refused();
      response = server_.handler_.refuse(Refusal::overloaded);
      if (head) response.body_mode = BodyMode::length_only;
    }
    const bool close = response.close || !keep_alive || server_.draining();
    sending_ = output_.hold(response);
    if (!co_await write(response, close, request.version) || close) break;
    // The scanner's views into the buffer served their purpose: the head's bytes can go.
    if (!parser.has_value()) buffer_.consume(scanner_.head().bytes);
  }

  if constexpr (kTls<Stream>) {
    // close_notify before the TCP close (RFC 8446 6.1): without it the client cannot tell the
    // end from a truncation, and OpenSSL-based clients do not resume the session.
    if (transport().socket().is_open()) {
      deadline_.set_after(kTlsCloseWait);
      co_await stream_.async_shutdown(as_tuple(use_task));
    }
  }
  deadline_.stop();
  boost::system::error_code ignored;
  transport().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  transport().socket().close(ignored);
}

template <class Stream>
Task<std::tuple<boost::system::error_code, std::size_t>> HttpSession<Stream>::read_some() {
  const auto space = buffer_.prepare(std::max(kFirstRead, beast::read_size(buffer_, 65536)));
  if constexpr (kTls<Stream>) {
    return stream_.async_read_some(space, as_tuple(use_task));
  } else {
    // The socket itself: tcp_stream's operation would wrap it for a timeout it no longer sets.
    return transport().socket().async_read_some(space, as_tuple(use_task));
  }
}

template <class Stream>
boost::system::error_code HttpSession<Stream>::took(boost::system::error_code ec, std::size_t n) {
  buffer_.commit(n);
  return timed_out_or(ec);
}

template <class Stream>
boost::system::error_code HttpSession<Stream>::parse_buffered_head(HeadParser& parser) {
  boost::system::error_code ec = bhttp::error::need_more;
  while (buffer_.size() > 0) {
    buffer_.consume(parser.put(buffer_.data(), ec));
    if (ec == bhttp::error::need_more) break;
    if (ec || parser.is_header_done()) return ec;
    ec = bhttp::error::need_more;
  }
  return ec;
}

template <class Stream>
Task<boost::system::error_code> HttpSession<Stream>::read_rest_of_head(HeadParser& parser) {
  // Beast's read_header loop (http/impl/read.hpp), entered only when the buffered bytes did
  // not hold the whole head: read, parse, until the head is complete.
  deadline_.set_after(server_.limits_.header_timeout);
  for (;;) {
    auto [read_ec, n] = co_await read_some();
    boost::system::error_code ec = took(read_ec, n);
    if (ec == asio::error::eof) {
      if (!parser.got_some()) co_return bhttp::error::end_of_stream;
      ec = {};
      parser.put_eof(ec);
      co_return ec;
    }
    if (ec) co_return ec;
    ec = parse_buffered_head(parser);
    if (ec != bhttp::error::need_more) co_return ec;
  }
}

template <class Stream>
std::optional<Response> HttpSession<Stream>::answer_before_body(const ScannedHead& req,
                                                                const RequestHeaders& headers) {
  const Request request{req.method, req.method_text, req.target,    req.version,
                        headers,    peer_,           req.keep_alive};
  std::optional<Response> early = server_.handler_.answer_before_body(request);
  if (early && req.method == bhttp::verb::head) early->body_mode = BodyMode::length_only;
  return early;
}

template <class Stream>
Task<std::optional<ScanResult>> HttpSession<Stream>::scan_rest_of_head() {
  // As read_rest_of_head, with the scanner: read until the bytes give an answer.
  deadline_.set_after(server_.limits_.header_timeout);
  for (;;) {
    auto [read_ec, n] = co_await read_some();
    const boost::system::error_code ec = took(read_ec, n);
    if (ec == asio::error::eof) {
      // As Beast's parser at the end of the stream: nothing of a request is a clean end,
      // part of one is answered for what it holds (malformed when it is cut short).
      if (scanner_.holds_nothing(buffered(buffer_))) co_return std::nullopt;
      co_return scanner_.finish(buffered(buffer_));
    }
    if (ec) co_return verdict_of(ec);
    const ScanResult result = scanner_.scan(buffered(buffer_));
    if (result != ScanResult::need_more) co_return result;
  }
}

template <class Stream>
Task<bool> HttpSession<Stream>::wait_for_room() {
  OutputBudget& budget = output_.budget();
  budget.count_paused();
  idle_ = true;  // drain() ends the wait as it ends an idle read
  room_.expires_after(server_.limits_.idle_timeout);
  bool expired = false;
  std::uint64_t ticket = 0;  // its place in the queue, kept when it has to wait again
  while (!output_.takes_new_work() && !server_.draining() && !expired) {
    auto wake = [weak = this->weak_from_this(), executor = executor_] {
      asio::post(executor, [weak] {
        if (auto self = weak.lock()) self->room_.cancel();
      });
    };
    ticket = budget.on_room(wake, ticket);
    auto [ec] = co_await room_.async_wait(as_tuple(use_task));
    budget.forget(ticket);
    expired = !ec;
  }
  idle_ = false;
  // Draining: the request read is answered (over budget, most likely with 503), then the
  // connection closes.
  co_return !expired;
}

template <class Stream>
Task<bool> HttpSession<Stream>::write(const Response& response, bool close, unsigned version) {
  write_http1_head(head_, response, date_value(clock_.wall_now()), close, version);
  const std::string_view body =
      response.body_mode == BodyMode::send ? response.body : std::string_view{};
  const int file = !kTls<Stream> && !body.empty() ? response.body_file : -1;

  // Written piece by piece rather than in one async_write, so that the bytes the client takes
  // are measured: each write must end before the client falls below min_send_rate.
  const config::ServerConfig& limits = server_.limits_;
  SendProgress progress(limits.min_send_rate, limits.send_rate_interval);
  progress.start(deadline_.now());
  const std::size_t total = head_.size() + body.size();
  std::size_t written = 0;
  bool ok = true;
  while (written < total) {
    boost::system::error_code ec;
    std::size_t n = 0;
    if constexpr (!kTls<Stream>) {
      // Straight to the socket; a coroutine only to wait for room (a frame per answer is an
      // allocation on the hit path).
      const FileSendStep step = send_step(body, file, written);
      n = step.bytes;
      if (step.error == EAGAIN && n == 0) {
        ec = co_await wait_for_socket_room(progress.deadline());
        if (!ec) continue;
      } else if (step.error != 0 && step.error != EAGAIN) {
        ec.assign(step.error, boost::system::system_category());
      }
    } else {
      std::array<asio::const_buffer, 2> unsent{asio::buffer(head_), asio::buffer(body)};
      if (written < head_.size()) {
        unsent[0] += written;
      } else {
        unsent[0] = asio::const_buffer{};
        unsent[1] += written - head_.size();
      }
      deadline_.set(progress.deadline());
      std::tie(ec, n) = co_await stream_.async_write_some(unsent, as_tuple(use_task));
      ec = timed_out_or(ec);
    }
    if (ec) {
      if (ec == beast::error::timeout) output_.budget().count_slow_reader();
      ok = false;
      break;
    }
    written += n;
    const auto now = deadline_.now();
    progress.sent(n, now);
    if (progress.too_slow(now)) {
      output_.budget().count_slow_reader();
      ok = false;
      break;
    }
  }
  sending_.release();
  co_return ok;
}

template <class Stream>
FileSendStep HttpSession<Stream>::send_step(std::string_view body, int file, std::size_t sent) {
  auto& socket = transport().socket();
  if (file < 0) return send_head_and_body(socket.native_handle(), head_, body, sent);
  if (!socket.native_non_blocking()) {
    // sendfile has no MSG_DONTWAIT. Asio's setter issues ioctl(FIONBIO) on every call; its
    // getter reads Asio's own flag, which the session's earlier reads have already set.
    boost::system::error_code ec;
    socket.native_non_blocking(true, ec);
    if (ec) return FileSendStep{0, ec.value()};
  }
  return send_head_and_file(socket.native_handle(), head_, file, body.size(), sent);
}

template <class Stream>
Task<boost::system::error_code> HttpSession<Stream>::wait_for_socket_room(SteadyTime deadline) {
  if (deadline_.now() >= deadline) co_return beast::error::timeout;
  deadline_.set(deadline);
  auto [ec] = co_await transport().socket().async_wait(asio::ip::tcp::socket::wait_write,
                                                       as_tuple(use_task));
  co_return timed_out_or(ec);
}

template <class Stream>
Task<void> HttpSession<Stream>::refuse_and_close(Refusal why, bool head) {
  // Closed whatever the refusal: what follows the head (a body, tunnel bytes, the rest of an
  // unparsed head) can no longer be read as requests.
  Response response = server_.handler_.refuse(why);
  if (head && response.body_mode == BodyMode::send) response.body_mode = BodyMode::length_only;
  sending_ = output_.hold(response);
  co_await write(response, true);
}

template class HttpSession<TcpStream>;
template class HttpSession<TlsStream>;

}  // namespace wg::http
