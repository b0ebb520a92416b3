#include "upstream-stub/stub_server.hpp"

#include <array>
#include <ctime>
#include <exception>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "widget_gateway/common/log.hpp"

namespace wg::stub {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// Something stop() can close from outside its strand.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // Thread-safe: posts the close to the session's strand.
  virtual void close() = 0;
};

// Open sessions, so that stop() can close them (hung ones never end by themselves). Holds weak
// pointers only: sessions own themselves through their coroutine.
class SessionRegistry {
 public:
  // False once close_all() has run: the caller must drop the session.
  bool add(const std::shared_ptr<SessionBase>& session, std::uint64_t& id) {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    id = ++next_id_;
    sessions_.emplace(id, session);
    return true;
  }
  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    sessions_.erase(id);
  }
  void close_all() {
    std::vector<std::weak_ptr<SessionBase>> open;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      for (const auto& [id, session] : sessions_) open.push_back(session);
    }
    // Outside the lock: dropping the last reference runs a destructor that calls remove().
    for (const auto& weak : open) {
      if (auto session = weak.lock()) session->close();
    }
  }

 private:
  std::mutex mutex_;
  bool closed_ = false;
  std::uint64_t next_id_ = 0;
  std::unordered_map<std::uint64_t, std::weak_ptr<SessionBase>> sessions_;
};

// RFC 9110 IMF-fixdate, for Date and Retry-After.
std::string http_date(std::time_t when) {
  std::tm tm{};
  gmtime_r(&when, &tm);
  char buf[40];
  const auto n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

void log_failure(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    log::error("stub_coroutine_failed", {{"what", ex.what()}});
  }
}

tcp::endpoint resolve_listen(const std::string& host, std::uint16_t port) {
  // No DNS: the stub only ever listens on a literal address.
  const auto address =
      host == "localhost" ? net::ip::make_address("127.0.0.1") : net::ip::make_address(host);
  return {address, port};
}

}  // namespace

namespace detail {

struct ServerState {
  ServerState(net::io_context& ioc, StubOptions opts)
      : options(std::move(opts)),
        dataset(options.seed, options.widgets, options.cache_bytes),
        handler(dataset),
        executor(ioc.get_executor()),
        acceptor(net::make_strand(ioc)) {}

  StubOptions options;
  Dataset dataset;
  StubHandler handler;
  net::any_io_executor executor;
  std::optional<ssl::context> tls;
  tcp::acceptor acceptor;  // used on its own strand only
  tcp::endpoint bound;     // the listener's address, port resolved
  SessionRegistry registry;
  std::atomic<bool> stopping{false};
};

}  // namespace detail

namespace {

using State = detail::ServerState;

// One connection. Owned by its coroutine (which holds a shared_ptr); runs on its own strand.
template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  Session(Stream stream, std::shared_ptr<State> state)
      : stream_(std::move(stream)),
        // Room for one maximal request plus pipelined bytes read along with it.
        buffer_(state->options.header_limit + state->options.body_limit + 64 * 1024),
        timer_(stream_.get_executor()),
        state_(std::move(state)) {}
  ~Session() override {
    if (id_ != 0) state_->registry.remove(id_);
  }

  void set_id(std::uint64_t id) { id_ = id; }
  net::any_io_executor executor() { return stream_.get_executor(); }

  void close() override {
    net::post(executor(), [self = this->shared_from_this()] { self->close_now(); });
  }

  // Serves requests one after another (pipelined ones in order) until the peer closes, a
  // timeout, an error, a fault that ends the connection, or stop().
  net::awaitable<void> run() {
    const StubOptions& options = state_->options;
    if constexpr (kTls) {
      lowest().expires_after(options.idle_timeout);
      auto [ec] = co_await stream_.async_handshake(ssl::stream_base::server, use_tuple);
      if (ec) co_return close_now();
    }
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(options.header_limit));
      parser.body_limit(options.body_limit);
      lowest().expires_after(options.idle_timeout);
      auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, use_tuple);
      if (ec == http::error::end_of_stream) break;
      if (ec) co_return close_now();  // timeout, reset, malformed or oversized request

      http::request<http::string_body> request = parser.release();
      const auto traceparent = request.find("traceparent");
      StubReply reply = state_->handler.handle(request.method(), request.target(),
                                               traceparent == request.end()
                                                   ? std::string_view()
                                                   : std::string_view(traceparent->value()));
      if (reply.delay.count() > 0) {
        timer_.expires_after(reply.delay);
        co_await timer_.async_wait(use_tuple);
        if (closed_) co_return;
      }
      switch (reply.fault) {
        case FaultMode::close:
          co_return close_now();
        case FaultMode::hang:
          co_return co_await hang();
        case FaultMode::truncate:
          co_await send_truncated(request, std::move(reply));
          co_return close_now();
        default:
          break;
      }
      const bool keep_alive = request.keep_alive() && !state_->stopping.load();
      if (!co_await send(request, std::move(reply), keep_alive)) co_return close_now();
      if (!keep_alive) break;
    }
    co_await shutdown();
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void close_now() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }

  template <class Body>
  void fill_headers(http::response<Body>& response, const StubReply& reply, bool keep_alive) {
    response.set(http::field::server, "widget-upstream-stub");
    // One reading for Date, a Retry-After date, Cache-Control and Expires.
    const std::time_t now = std::time(nullptr);
    response.set(http::field::date, http_date(now));
    response.set(http::field::content_type, "application/json; charset=utf-8");
    for (const auto& [name, value] : reply.headers) response.set(name, value);
    if (reply.retry_after_date) {
      response.set(http::field::retry_after, http_date(now + reply.retry_after_date->count()));
    }
    if (reply.cacheable && state_->options.expires_at) {  // same reading: max-age ends at Expires
      const std::int64_t expires = next_expiry(*state_->options.expires_at, now);
      response.set(http::field::cache_control, "public, max-age=" + std::to_string(expires - now));
      response.set(http::field::expires, http_date(static_cast<std::time_t>(expires)));
    }
    response.keep_alive(keep_alive);
  }

  // Writes the reply (headers only for HEAD). False when the write failed.
  net::awaitable<bool> send(const http::request<http::string_body>& request, StubReply reply,
                            bool keep_alive) {
    lowest().expires_after(state_->options.write_timeout);
    if (request.method() == http::verb::head) {
      http::response<http::empty_body> response{reply.status, request.version()};
      fill_headers(response, reply, keep_alive);
      response.content_length(reply.body.size());
      auto [ec, n] = co_await http::async_write(stream_, response, use_tuple);
      co_return !ec;
    }
    http::response<http::string_body> response{reply.status, request.version(),
                                               std::move(reply.body)};
    fill_headers(response, reply, keep_alive);
    response.prepare_payload();
    auto [ec, n] = co_await http::async_write(stream_, response, use_tuple);
    co_return !ec;
  }

  // Headers announcing the whole body, then only its first half. The caller closes.
  net::awaitable<void> send_truncated(const http::request<http::string_body>& request,
                                      StubReply reply) {
    if (request.method() == http::verb::head) {
      co_await send(request, std::move(reply), false);
      co_return;
    }
    lowest().expires_after(state_->options.write_timeout);
    http::response<http::string_body> response{reply.status, request.version(),
                                               std::move(reply.body)};
    fill_headers(response, reply, true);
    response.prepare_payload();
    http::response_serializer<http::string_body> serializer{response};
    auto [ec, n] = co_await http::async_write_header(stream_, serializer, use_tuple);
    if (ec) co_return;
    const std::string& body = response.body();
    co_await net::async_write(stream_, net::buffer(body.data(), body.size() / 2), use_tuple);
  }

  // Never answers; keeps the connection until the peer goes away, stop(), or the hang limit.
  net::awaitable<void> hang() {
    lowest().expires_after(state_->options.hang_limit);
    std::array<char, 512> scratch;
    for (;;) {
      auto [ec, n] = co_await lowest().async_read_some(net::buffer(scratch), use_tuple);
      if (ec) break;
    }
    close_now();
  }

  // Orderly end after a response without keep-alive or a peer's end of stream.
  net::awaitable<void> shutdown() {
    if (closed_) co_return;
    if constexpr (kTls) {
      lowest().expires_after(state_->options.shutdown_timeout);
      co_await stream_.async_shutdown(use_tuple);
    } else {
      beast::error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    close_now();
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  net::steady_timer timer_;  // latency
  std::shared_ptr<State> state_;
  std::uint64_t id_ = 0;
  bool closed_ = false;
};

template <class Stream>
void spawn_session(const std::shared_ptr<State>& state, Stream stream) {
  auto session = std::make_shared<Session<Stream>>(std::move(stream), state);
  std::uint64_t id = 0;
  if (!state->registry.add(session, id)) return;  // stopping: dropping it closes the socket
  session->set_id(id);
  net::co_spawn(
      session->executor(), [session]() -> net::awaitable<void> { co_await session->run(); },
      log_failure);
}

net::awaitable<void> accept_loop(std::shared_ptr<State> state) {
  net::steady_timer backoff(co_await net::this_coro::executor);
  while (!state->stopping.load()) {
    auto [ec, socket] =
        co_await state->acceptor.async_accept(net::make_strand(state->executor), use_tuple);
    if (state->stopping.load() || ec == net::error::operation_aborted) co_return;
    if (ec) {
      // E.g. out of file descriptors: pause instead of spinning.
      log::warn("stub_accept_failed", {{"error", ec.message()}});
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(use_tuple);
      continue;
    }
    state->handler.note_connection();
    if (state->tls) {
      spawn_session(
          state, ssl::stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *state->tls));
    } else {
      spawn_session(state, beast::tcp_stream(std::move(socket)));
    }
  }
}

}  // namespace

std::int64_t next_expiry(std::int64_t expires_at, std::int64_t now) {
  constexpr std::int64_t kDay = 86400;
  if (expires_at > now) return expires_at;
  return expires_at + ((now - expires_at) / kDay + 1) * kDay;
}

StubServer::StubServer(net::io_context& ioc, StubOptions options)
    : state_(std::make_shared<detail::ServerState>(ioc, std::move(options))) {
  const StubOptions& opts = state_->options;
  if (!opts.tls_cert_file.empty() && !opts.tls_key_file.empty()) {
    auto& tls = state_->tls.emplace(ssl::context::tls_server);
    tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    tls.use_certificate_chain_file(opts.tls_cert_file);
    tls.use_private_key_file(opts.tls_key_file, ssl::context::pem);
  }
  if (opts.prerender) state_->dataset.render_all();
  const tcp::endpoint endpoint = resolve_listen(opts.host, opts.port);
  tcp::acceptor& acceptor = state_->acceptor;
  acceptor.open(endpoint.protocol());
  acceptor.set_option(net::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(net::socket_base::max_listen_connections);
  state_->bound = acceptor.local_endpoint();
}

StubServer::~StubServer() {
  stop();
}

void StubServer::start() {
  net::co_spawn(state_->acceptor.get_executor(), accept_loop(state_), log_failure);
}

void StubServer::stop() {
  if (state_->stopping.exchange(true)) return;
  net::post(state_->acceptor.get_executor(), [state = state_] {
    beast::error_code ignored;
    state->acceptor.close(ignored);
  });
  state_->registry.close_all();
}

tcp::endpoint StubServer::local_endpoint() const {
  return state_->bound;
}

bool StubServer::tls() const {
  return state_->tls.has_value();
}
StubHandler& StubServer::handler() {
  return state_->handler;
}
const Dataset& StubServer::dataset() const {
  return state_->dataset;
}

}  // namespace wg::stub
