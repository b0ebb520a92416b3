#include "widget_gateway/http/server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <vector>

#include "output_budget.hpp"
#include "session.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/http/tls_server_context.hpp"

namespace wg::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::as_tuple;
using asio::ip::tcp;

namespace {

tcp::endpoint resolve_listen_address(const config::HostPort& where) {
  std::string host = where.host;
  if (host == "localhost") host = "127.0.0.1";
  if (host == "*") host = "0.0.0.0";
  return {asio::ip::make_address(host), where.port};
}

}  // namespace

HttpServer::HttpServer(asio::io_context& ioc, std::string name, const config::ServerConfig& limits,
                       RequestHandler& handler, const Clock& clock)
    : ioc_(ioc),
      clock_(clock),
      name_(std::move(name)),
      limits_(limits),
      handler_(handler),
      acceptor_(ioc.get_executor()),
      output_(std::make_unique<OutputBudget>(limits.max_pending_output_bytes, stats_,
                                             OutputBudget::Access::owner_thread)) {}

HttpServer::~HttpServer() = default;

tcp::endpoint HttpServer::bind(const config::HostPort& where, bool share_port) {
  return bind(resolve_listen_address(where), share_port);
}

tcp::endpoint HttpServer::bind(const tcp::endpoint& endpoint, bool share_port) {
  using reuse_port = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  if (share_port) acceptor_.set_option(reuse_port(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  return acceptor_.local_endpoint();
}

void HttpServer::start() {
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), asio::detached);
}

Task<void> HttpServer::accept_loop() {
  SteadyTimer backoff(acceptor_.get_executor());
  while (!draining()) {
    auto [ec, socket] = co_await acceptor_.async_accept(as_tuple(use_task));
    if (ec == asio::error::operation_aborted || draining()) co_return;
    if (ec) {
      // Usually EMFILE/ENFILE: wait a little instead of spinning on the error.
      log::warn("accept_failed", {{"listener", name_}, {"error", ec.message()}});
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(as_tuple(use_task));
      continue;
    }
    stats_.accepted.fetch_add(1, std::memory_order_relaxed);
    if (static_cast<std::size_t>(stats_.open.load(std::memory_order_relaxed)) >=
        limits_.max_connections) {
      stats_.rejected_over_limit.fetch_add(1, std::memory_order_relaxed);
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto executor = socket.get_executor();
    if (tls_) {
      // The context of the moment: a reload changes it for later connections only.
      std::shared_ptr<asio::ssl::context> context = tls_->current();
      TlsStream stream(TcpStream(std::move(socket)), *context);
      auto session = std::make_shared<TlsSession>(*this, std::move(stream), std::move(context));
      asio::co_spawn(executor, session->run(), asio::detached);
    } else {
      auto session = std::make_shared<PlainSession>(*this, TcpStream(std::move(socket)));
      asio::co_spawn(executor, session->run(), asio::detached);
    }
  }
}

void HttpServer::register_session(Connection* session) {
  std::lock_guard lock(sessions_mutex_);
  sessions_.insert(session);
  stats_.open.fetch_add(1, std::memory_order_relaxed);
}

void HttpServer::unregister_session(Connection* session) {
  std::lock_guard lock(sessions_mutex_);
  sessions_.erase(session);
  stats_.open.fetch_sub(1, std::memory_order_relaxed);
}

void HttpServer::check_deadlines() {
  for (auto& session : live_sessions()) session->check_deadline();
}

std::vector<std::shared_ptr<Connection>> HttpServer::live_sessions() {
  // The references are dropped after the lock: the last one ends its session, which takes it.
  std::vector<std::shared_ptr<Connection>> live;
  std::lock_guard lock(sessions_mutex_);
  for (Connection* s : sessions_) {
    if (auto locked = s->lock()) live.push_back(std::move(locked));
  }
  return live;
}

asio::awaitable<void> HttpServer::drain(std::chrono::steady_clock::duration timeout) {
  draining_.store(true);
  co_await asio::post(acceptor_.get_executor(), asio::use_awaitable);
  boost::system::error_code ignored;
  acceptor_.close(ignored);

  for (auto& session : live_sessions()) session->drain();

  // Poll until every session is gone; shutdown is rare, so a coarse timer is fine. The wait is
  // the sum of the ticks: no clock to read.
  constexpr std::chrono::milliseconds kTick{20};
  SteadyTimer tick(acceptor_.get_executor());
  std::chrono::milliseconds waited{0};
  std::chrono::milliseconds limit = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  bool forced = false;
  while (stats_.open.load() > 0) {
    if (!forced && waited >= limit) {
      log::warn("drain_timeout", {{"listener", name_}, {"open", stats_.open.load()}});
      for (auto& session : live_sessions()) session->force_close();
      forced = true;
      waited = std::chrono::milliseconds(0);
      limit = std::chrono::seconds(2);
    } else if (forced && waited >= limit) {
      break;  // sessions stuck in a handler; the io_context stop will end them
    }
    tick.expires_after(kTick);
    co_await tick.async_wait(as_tuple(asio::use_awaitable));
    waited += kTick;
  }
}

}  // namespace wg::http
