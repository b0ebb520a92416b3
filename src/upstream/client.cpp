#include "widget_gateway/upstream/client.hpp"

#include <openssl/ssl.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "upstream/base_url.hpp"
#include "upstream/connection.hpp"
#include "upstream/error_map.hpp"
#include "widget_gateway/common/error.hpp"

namespace wg::upstream {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Resolved addresses are reused this long: upstream is one host, and a lookup per new
// connection would add latency (and resolver threads) exactly when connections churn.
constexpr std::chrono::seconds kDnsCacheTtl{30};

// Upstream's response head is small; this only stops a misbehaving peer.
constexpr std::uint32_t kMaxResponseHeaderBytes = 64 * 1024;

// A pooled connection is used again only this long after its last answer. A server closes an
// idle keep-alive connection when its own timeout runs out (Node's default is 5 s); a request
// written as that close crosses it never reaches the server, yet its quota unit is spent. So
// the gateway lets go first.
constexpr std::chrono::milliseconds kMaxIdleReuse{4000};

// How long a connection whose answer said `Keep-Alive: <value>` may be reused once idle: a
// second less than the `timeout=` it announces, at most kMaxIdleReuse; 0 = not at all.
std::chrono::milliseconds idle_limit(std::string_view keep_alive) {
  constexpr std::string_view kTimeout = "timeout=";
  while (!keep_alive.empty()) {
    const std::size_t comma = keep_alive.find(',');
    std::string_view item = keep_alive.substr(0, comma);
    keep_alive =
        comma == std::string_view::npos ? std::string_view() : keep_alive.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    if (item.size() <= kTimeout.size() ||
        !beast::iequals(item.substr(0, kTimeout.size()), kTimeout))
      continue;
    item.remove_prefix(kTimeout.size());
    unsigned seconds = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), seconds);
    if (ec == std::errc::result_out_of_range) return kMaxIdleReuse;  // a huge timeout
    if (ec != std::errc()) break;                                    // not a number: ignored
    if (seconds <= 1) return std::chrono::milliseconds(0);
    return std::min(kMaxIdleReuse, std::chrono::milliseconds(seconds * 1000ull - 1000));
  }
  return kMaxIdleReuse;
}

using Request = http::request<http::empty_body>;
using Parser = http::response_parser<http::string_body>;

// Reads one response. Over plain TCP, what has already arrived is parsed at once, without
// waiting: each asynchronous read's completion goes to the back of the worker's queue, behind
// every session ready at the time, and a 150 KB window comes in several reads. On a saturated
// worker (zipf-site) a window took 49 ms against 21 ms for widget data, with 20 ms of upstream
// latency. Over TLS, one asynchronous read at a time, as Beast composes it.
//
// Beast sizes each read by the buffer's free capacity, 512 bytes at least: a buffer left at
// its first size read a 150 KB window 512 bytes at a time, 300 system calls. It is grown for
// the read and shrunk when the response leaves nothing in it, so an idle pooled connection
// holds no read memory.
constexpr std::size_t kReadBytes = 64 * 1024;

template <class Stream>
asio::awaitable<boost::system::error_code> read_response_in(Stream& stream,
                                                            beast::flat_buffer& buffer,
                                                            Parser& parser) {
  if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
    co_return ec;
  } else {
    boost::system::error_code ec;
    while (!ec && !parser.is_done()) {
      auto [waited_ec, n] = co_await http::async_read_some(stream, buffer, parser, use_tuple);
      ec = waited_ec;
      while (!ec && !parser.is_done()) {
        boost::system::error_code now_ec;  // the socket is in non-blocking mode (open())
        http::read_some(stream, buffer, parser, now_ec);
        if (now_ec == asio::error::would_block) break;
        ec = now_ec;
      }
    }
    co_return ec;
  }
}

template <class Stream>
asio::awaitable<boost::system::error_code> read_response(Stream& stream, beast::flat_buffer& buffer,
                                                         Parser& parser) {
  buffer.reserve(kReadBytes);
  const boost::system::error_code ec = co_await read_response_in(stream, buffer, parser);
  if (buffer.size() == 0) buffer.shrink_to_fit();
  co_return ec;
}

std::unique_ptr<ssl::context> make_tls_context(const std::string& ca_file) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  context->set_verify_mode(ssl::verify_peer);
  // The system store is always trusted; ca_file adds to it (e.g. a private CA).
  context->set_default_verify_paths();
  if (!ca_file.empty()) {
    if (!std::ifstream(ca_file).good()) {
      throw std::invalid_argument("upstream.ca_file \"" + ca_file + "\": cannot be read");
    }
    boost::system::error_code ec;
    context->load_verify_file(ca_file, ec);
    if (ec) {
      throw std::invalid_argument("upstream.ca_file \"" + ca_file + "\": no usable certificate (" +
                                  ec.message() + ")");
    }
  }
  return context;
}

}  // namespace

class Client::Impl {
 public:
  Impl(asio::any_io_executor ex, const config::UpstreamConfig& config, Clock& clock)
      : ex_(std::move(ex)),
        base_(parse_base_url(config.base_url)),
        port_text_(std::to_string(base_.port)),
        authority_(
            (base_.host.find(':') != std::string::npos ? "[" + base_.host + "]" : base_.host) +
            ":" + port_text_),
        connect_timeout_(config.connect_timeout),
        timeout_(config.timeout),
        pool_size_(config.pool_size),
        max_body_bytes_(config.max_body_bytes),
        clock_(clock) {
    if (base_.tls) {
      tls_context_ = make_tls_context(config.ca_file);
    } else if (!config.ca_file.empty() && !std::ifstream(config.ca_file).good()) {
      // Checked even for plain http so a typo fails at start, not at a later switch to https.
      throw std::invalid_argument("upstream.ca_file \"" + config.ca_file + "\": cannot be read");
    }
  }

  ~Impl() { close_idle(); }

  asio::awaitable<Result> get(std::string path_and_query, const TraceHeaders& trace);

  void close_idle() {
    std::deque<std::unique_ptr<Connection>> dropped;
    {
      std::lock_guard lock(pool_mutex_);
      dropped.swap(idle_);
    }
    // Sockets close here, outside the lock.
  }

  Stats stats() const {
    return {connections_opened_.load(), requests_sent_.load(), reuses_.load(), retries_.load()};
  }
  const std::string& authority() const { return authority_; }

 private:
  struct Exchange {
    std::error_code ec;
    std::error_code cause;  // Result::cause
    Response response;
    bool unsent = false;      // the write failed having sent nothing: upstream cannot have it
    bool keep_alive = false;  // the connection may carry another request
    std::chrono::milliseconds reusable_for{0};  // ... once idle this long at most
  };

  Request make_request(const std::string& path_and_query, const TraceHeaders& trace) const;
  asio::awaitable<std::pair<std::error_code, tcp::resolver::results_type>> resolve(
      asio::steady_timer::time_point deadline);
  asio::awaitable<std::error_code> open(Connection& connection);
  template <class Stream>
  asio::awaitable<Exchange> exchange(Stream& stream, Connection& connection,
                                     const Request& request);
  std::unique_ptr<Connection> take_idle(bool& found_closed);
  void put_idle(std::unique_ptr<Connection> connection);

  const asio::any_io_executor ex_;
  const BaseUrl base_;
  const std::string port_text_;
  const std::string authority_;  // host:port ([host]:port for an IPv6 address)
  const std::chrono::milliseconds connect_timeout_;
  const std::chrono::milliseconds timeout_;
  const std::size_t pool_size_;
  const std::size_t max_body_bytes_;
  Clock& clock_;
  std::unique_ptr<ssl::context> tls_context_;  // set for https only

  std::mutex pool_mutex_;
  std::deque<std::unique_ptr<Connection>> idle_;  // most recently used at the back

  struct CachedAddresses {
    tcp::resolver::results_type endpoints;
    SteadyTime expires;
  };
  std::mutex dns_mutex_;
  std::optional<CachedAddresses> dns_cache_;

  std::atomic<std::uint64_t> connections_opened_{0};
  std::atomic<std::uint64_t> requests_sent_{0};
  std::atomic<std::uint64_t> reuses_{0};
  std::atomic<std::uint64_t> retries_{0};
};

Request Client::Impl::make_request(const std::string& path_and_query,
                                   const TraceHeaders& trace) const {
  Request request{http::verb::get, base_.path_prefix + path_and_query, 11};
  request.set(http::field::host, base_.host_header);
  request.set(http::field::user_agent, "widget-gateway/" WG_VERSION);
  request.set(http::field::accept, "application/json");
  // Bodies are stored and served as upstream's exact bytes; no compressed variants upstream.
  request.set(http::field::accept_encoding, "identity");
  if (!trace.traceparent.empty()) request.set("traceparent", trace.traceparent);
  if (!trace.tracestate.empty()) request.set("tracestate", trace.tracestate);
  return request;
}

asio::awaitable<std::pair<std::error_code, tcp::resolver::results_type>> Client::Impl::resolve(
    asio::steady_timer::time_point deadline) {
  {
    std::lock_guard lock(dns_mutex_);
    if (dns_cache_ && clock_.steady_now() < dns_cache_->expires) {
      co_return std::pair{std::error_code{}, dns_cache_->endpoints};
    }
  }
  // tcp::resolver has no deadline of its own: race it against a timer; the loser is
  // cancelled. Both live on this coroutine's executor.
  using namespace asio::experimental::awaitable_operators;
  auto executor = co_await asio::this_coro::executor;
  tcp::resolver resolver(executor);
  asio::steady_timer timer(executor, deadline);
  auto outcome = co_await (resolver.async_resolve(base_.host, port_text_, use_tuple) ||
                           timer.async_wait(use_tuple));
  if (outcome.index() == 1)
    co_return std::pair{make_error_code(errc::upstream_timeout), tcp::resolver::results_type{}};
  auto [ec, endpoints] = std::get<0>(std::move(outcome));
  if (ec || endpoints.empty()) {
    co_return std::pair{make_error_code(errc::upstream_connect_failed),
                        tcp::resolver::results_type{}};
  }
  {
    std::lock_guard lock(dns_mutex_);
    dns_cache_ = CachedAddresses{endpoints, clock_.steady_now() + kDnsCacheTtl};
  }
  co_return std::pair{std::error_code{}, std::move(endpoints)};
}

asio::awaitable<std::error_code> Client::Impl::open(Connection& connection) {
  // connect_timeout bounds resolve, connect and handshake together.
  const auto deadline = timer_now() + connect_timeout_;  // it arms timers (clock.hpp)
  auto [resolve_ec, endpoints] = co_await resolve(deadline);
  if (resolve_ec) co_return resolve_ec;

  auto& tcp_stream = connection.tcp();
  tcp_stream.expires_at(deadline);
  auto [connect_ec, endpoint] = co_await tcp_stream.async_connect(endpoints, use_tuple);
  if (connect_ec) {
    // The addresses may be stale: look them up again next time.
    std::lock_guard lock(dns_mutex_);
    dns_cache_.reset();
    connection.open_failure = connect_ec;
    co_return map_connect_error(connect_ec);
  }
  ++connections_opened_;
  // Synchronous reads then return would_block instead of blocking the worker (read_response).
  boost::system::error_code ignored;
  tcp_stream.socket().non_blocking(true, ignored);

  if (auto* tls = connection.tls()) {
    if (base_.host_is_name && !SSL_set_tlsext_host_name(tls->native_handle(), base_.host.c_str())) {
      co_return make_error_code(errc::upstream_connect_failed);
    }
    tls->set_verify_callback([check = ssl::host_name_verification(base_.host),
                              &rejected = connection.certificate_rejected](
                                 bool preverified, ssl::verify_context& context) {
      const bool ok = check(preverified, context);
      if (!ok) rejected = true;
      return ok;
    });
    auto [handshake_ec] = co_await tls->async_handshake(ssl::stream_base::client, use_tuple);
    if (handshake_ec) {
      connection.open_failure = handshake_ec;
      co_return map_handshake_error(handshake_ec, connection.certificate_rejected);
    }
  }
  tcp_stream.expires_never();
  co_return std::error_code{};
}

template <class Stream>
asio::awaitable<Client::Impl::Exchange> Client::Impl::exchange(Stream& stream,
                                                               Connection& connection,
                                                               const Request& request) {
  Exchange out;
  auto& tcp_stream = connection.tcp();
  // One deadline for the whole exchange: a slow trickle cannot stretch it.
  tcp_stream.expires_after(timeout_);

  ++requests_sent_;
  auto [write_ec, written] = co_await http::async_write(stream, request, use_tuple);
  if (write_ec) {
    out.ec = map_write_error(write_ec);
    if (write_ec != beast::error::timeout) out.cause = write_ec;
    // Only zero bytes proves upstream lacks the request. (TLS counts a failed piece as zero:
    // its record did not get out whole, so upstream cannot decrypt it; pieces sent before it
    // count.)
    out.unsent = written == 0;
    co_return out;
  }

  Parser parser;
  parser.header_limit(kMaxResponseHeaderBytes);
  parser.body_limit(max_body_bytes_);
  const boost::system::error_code read_ec =
      co_await read_response(stream, connection.buffer(), parser);
  if (read_ec) {
    out.ec = map_read_error(read_ec, parser.is_header_done());
    if (read_ec != beast::error::timeout && read_ec != http::error::end_of_stream) {
      out.cause = read_ec;
    }
    co_return out;
  }
  tcp_stream.expires_never();
  // Leftover bytes after a complete response mean the peer is out of step: do not reuse.
  out.keep_alive = parser.keep_alive() && connection.buffer().size() == 0;
  const auto keep_alive_header = parser.get().find(http::field::keep_alive);
  out.reusable_for = idle_limit(keep_alive_header == parser.get().end()
                                    ? std::string_view()
                                    : std::string_view(keep_alive_header->value()));
  out.response.status = parser.get().result_int();
  if (auto it = parser.get().find(http::field::retry_after); it != parser.get().end()) {
    out.response.retry_after = std::string(it->value());
  }
  out.response.body = std::move(parser.get().body());
  co_return out;
}

std::unique_ptr<Connection> Client::Impl::take_idle(bool& found_closed) {
  for (;;) {
    std::unique_ptr<Connection> candidate;
    {
      std::lock_guard lock(pool_mutex_);
      if (idle_.empty()) return nullptr;
      candidate = std::move(idle_.back());
      idle_.pop_back();
    }
    // Idle past its limit: the server may be closing it right now. Dropped, and since it was
    // never written to, no retry is spent on it. The ones before it in the pool are older.
    if (clock_.steady_now() - candidate->idle_since >= candidate->reusable_for) {
      close_idle();
      return nullptr;
    }
    // The peek is a syscall: done outside the lock. A closed one is dropped here.
    if (!candidate->peer_gone()) return candidate;
    found_closed = true;
  }
}

void Client::Impl::put_idle(std::unique_ptr<Connection> connection) {
  std::unique_ptr<Connection> evicted;
  {
    std::lock_guard lock(pool_mutex_);
    if (pool_size_ == 0) return;  // `connection` closes on return, outside the lock
    connection->idle_since = clock_.steady_now();
    if (idle_.size() >= pool_size_) {
      evicted = std::move(idle_.front());  // the least recently used
      idle_.pop_front();
    }
    idle_.push_back(std::move(connection));
  }
}

asio::awaitable<Result> Client::Impl::get(std::string path_and_query, const TraceHeaders& trace) {
  const SteadyTime start = clock_.steady_now();
  const Request request = make_request(path_and_query, trace);
  Result result;

  bool found_closed = false;  // a pooled connection was dead: our one retry is used
  std::unique_ptr<Connection> connection = take_idle(found_closed);
  bool reused = connection != nullptr;
  for (;;) {
    if (!connection) {
      connection = std::make_unique<Connection>(ex_, tls_context_.get());
      reused = false;
      if (auto ec = co_await open(*connection)) {
        result.ec = ec;
        result.cause = connection->open_failure;
        result.nothing_sent = true;
        break;
      }
    }
    if (reused) ++reuses_;
    Exchange exchanged;
    if (auto* tls = connection->tls()) {
      exchanged = co_await exchange(*tls, *connection, request);
    } else {
      exchanged = co_await exchange(connection->tcp(), *connection, request);
    }
    // A deadline is never retried: it bounds the whole get().
    if (exchanged.unsent && exchanged.ec != errc::upstream_timeout && reused && !found_closed) {
      // The pooled connection died while idle and the peek did not see it yet. Not one byte
      // of the request left, so one more try, on a fresh connection.
      found_closed = true;
      connection.reset();
      continue;
    }
    result.ec = exchanged.ec;
    result.cause = exchanged.cause;
    result.nothing_sent = exchanged.unsent;
    result.response = std::move(exchanged.response);
    result.reused_connection = reused;
    if (!exchanged.ec && exchanged.keep_alive && exchanged.reusable_for.count() > 0) {
      connection->reusable_for = exchanged.reusable_for;
      put_idle(std::move(connection));
    }
    break;
  }
  if (found_closed) ++retries_;
  result.elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(clock_.steady_now() - start);
  co_return result;
}

Client::Client(asio::any_io_executor ex, const config::UpstreamConfig& config, Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(ex), config, clock)) {}

Client::~Client() = default;

asio::awaitable<Result> Client::get(std::string path_and_query) {
  static const TraceHeaders none;
  co_return co_await impl_->get(std::move(path_and_query), none);
}

asio::awaitable<Result> Client::get(std::string path_and_query, const TraceHeaders& trace) {
  co_return co_await impl_->get(std::move(path_and_query), trace);
}

void Client::close_idle() {
  impl_->close_idle();
}

Client::Stats Client::stats() const {
  return impl_->stats();
}

const std::string& Client::authority() const {
  return impl_->authority();
}

}  // namespace wg::upstream
