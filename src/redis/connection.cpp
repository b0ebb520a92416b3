#include "redis/connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>

namespace wg::redis::detail {

namespace asio = boost::asio;
namespace ssl = asio::ssl;

namespace {

// Probes notice a peer that vanished without closing, even on an idle connection: first after
// 15 s of silence, then every 5 s, three times (hiredis' redisEnableKeepAlive does the same).
void enable_keepalive(asio::ip::tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.set_option(asio::socket_base::keep_alive(true), ignored);
  const int fd = socket.native_handle();
  const int idle = 15, interval = 5, count = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

std::string read_error(const boost::system::error_code& ec) {
  if (ec == asio::error::eof || ec == ssl::error::stream_truncated) {
    return "connection closed by the server";
  }
  return "read failed: " + ec.message();
}

}  // namespace

Connection::Connection(const Strand& strand, ssl::context* tls, ConnectionEvents& events)
    : events_(&events), plain_(strand) {
  if (tls != nullptr) tls_.emplace(strand, *tls);
}

Connection::~Connection() {
  // Normally closed already; this is the safety net for teardown paths.
  events_ = nullptr;
  shut();
}

void Connection::connect(const Tcp::endpoint& to, const std::string& server_name) {
  server_name_ = server_name;
  socket().async_connect(to, [self = shared_from_this()](boost::system::error_code ec) {
    if (!self->open_) return;
    if (ec) return self->fail(ec.message());
    self->on_tcp_connected();
  });
}

void Connection::on_tcp_connected() {
  boost::system::error_code ignored;
  socket().set_option(Tcp::no_delay(true), ignored);
  enable_keepalive(socket());
  if (!tls_) return on_established();

  boost::system::error_code not_ip;
  asio::ip::make_address(server_name_, not_ip);
  // SNI carries host names only (RFC 6066); an IP address is verified without it.
  if (not_ip && SSL_set_tlsext_host_name(tls_->native_handle(), server_name_.c_str()) != 1) {
    return fail("TLS: cannot set the server name \"" + server_name_ + "\"");
  }
  // Chain verification is the context's (verify_peer); this adds the name (or IP) check and
  // remembers a mismatch, which OpenSSL would only report as "certificate verify failed".
  tls_->set_verify_callback([check = ssl::host_name_verification(server_name_), this](
                                bool preverified, ssl::verify_context& context) {
    const bool ok = check(preverified, context);
    if (preverified && !ok) name_rejected_ = true;
    return ok;
  });
  tls_->async_handshake(ssl::stream_base::client,
                        [self = shared_from_this()](boost::system::error_code ec) {
                          if (!self->open_) return;
                          if (!ec) return self->on_established();
                          if (self->name_rejected_) {
                            return self->fail("TLS: the server certificate does not match \"" +
                                              self->server_name_ + "\"");
                          }
                          std::string why = "TLS handshake failed: " + ec.message();
                          const long verify = SSL_get_verify_result(self->tls_->native_handle());
                          if (verify != X509_V_OK) {
                            why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
                          }
                          self->fail(std::move(why));
                        });
}

void Connection::on_established() {
  established_ = true;
  read();
  write();  // whatever was queued meanwhile
  if (events_ != nullptr) events_->on_connect(true);
}

bool Connection::send(const std::vector<std::string>& args, ReplyHandler on_reply) {
  if (!open_ || !append_command(args, queued_)) return false;
  if (on_reply) {
    waiting_.push_back({std::move(on_reply), timer_now(), {}});
    ++unwritten_;
  }
  write();
  return true;
}

void Connection::close() {
  events_ = nullptr;
  shut();
}

// One read is always outstanding once established; replies are handed out in order as soon
// as they are complete.
void Connection::read() {
  auto on_read = [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
    if (!self->open_) return;
    if (ec) return self->fail(read_error(ec));
    self->parser_.feed(self->read_buffer_.data(), n);
    while (self->open_) {
      auto reply = self->parser_.next();
      if (!reply) break;
      self->deliver(*reply);
    }
    if (!self->open_) return;
    if (!self->parser_.error().empty())
      return self->fail("protocol error: " + self->parser_.error());
    self->read();
  };
  if (tls_) {
    tls_->async_read_some(asio::buffer(read_buffer_), std::move(on_read));
  } else {
    plain_.async_read_some(asio::buffer(read_buffer_), std::move(on_read));
  }
}

// At most one write in flight; commands queued meanwhile go out together in the next one.
void Connection::write() {
  if (writing_ || !established_ || !open_ || queued_.empty()) return;
  writing_ = true;
  sending_.swap(queued_);  // queued_ takes the emptied buffer of the last write, capacity kept
  const SteadyTime now = timer_now();
  for (std::size_t i = waiting_.size() - unwritten_; i < waiting_.size(); ++i) {
    waiting_[i].written = now;
  }
  unwritten_ = 0;
  auto on_written = [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
    self->writing_ = false;
    if (!self->open_) return;
    if (ec) return self->fail("write failed: " + ec.message());
    self->sending_.clear();
    self->write();
  };
  if (tls_) {
    asio::async_write(*tls_, asio::buffer(sending_), std::move(on_written));
  } else {
    asio::async_write(plain_, asio::buffer(sending_), std::move(on_written));
  }
}

void Connection::deliver(Reply& reply) {
  if (!waiting_.empty()) {
    Waiting waiting = std::move(waiting_.front());
    waiting_.pop_front();
    unwritten_ = std::min(unwritten_, waiting_.size());
    if (events_ != nullptr) {
      events_->on_round_trip(waiting.written - waiting.queued, timer_now() - waiting.written);
    }
    waiting.handler(&reply);
  } else if (on_push_) {
    on_push_(reply);
  } else {
    fail("a reply nothing asked for");
  }
}

void Connection::fail(std::string why) {
  if (!open_) return;
  error_ = std::move(why);
  const bool was_established = established_;
  shut();
  if (events_ == nullptr) return;
  if (was_established) {
    events_->on_disconnect();
  } else {
    events_->on_connect(false);
  }
}

void Connection::shut() {
  if (!open_) return;
  open_ = false;
  established_ = false;
  boost::system::error_code ignored;
  socket().close(ignored);  // outstanding operations complete with operation_aborted
  // Moved out first: a handler may send (refused now) or close (a no-op now).
  auto waiting = std::move(waiting_);
  waiting_.clear();
  unwritten_ = 0;
  for (auto& w : waiting) w.handler(nullptr);
}

}  // namespace wg::redis::detail
