#pragma once
// One Redis connection: an Asio TCP socket, or a TLS stream over one for rediss://, carrying
// commands formatted and replies parsed by resp_codec.
//
// Commands are queued in one output buffer and written together while a write is in flight,
// so many commands are pipelined on the connection; replies arrive in sending order and go to
// a FIFO of handlers. A command sent without a handler expects no reply of its own (SUBSCRIBE):
// replies arriving while no handler waits go to the push handler.
//
// Threading: everything, including construction and destruction, happens on one strand. The
// pending I/O operations hold a shared_ptr to the connection until they complete.

#include <array>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis/resp_codec.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::redis::detail {

using Strand = boost::asio::strand<boost::asio::any_io_executor>;

// Receives a connection's events on the strand. An implementation must not destroy the
// connection synchronously (closing it is fine).
class ConnectionEvents {
 public:
  // Exactly once per connect() (unless close() comes first): whether the TCP connect and, for
  // TLS, the handshake succeeded.
  virtual void on_connect(bool ok) = 0;
  // Once, after a successful connect, when the connection is lost (peer closed, I/O error,
  // protocol error). Not called for close().
  virtual void on_disconnect() = 0;
  // A command's reply came: how long the command waited in the connection's output queue
  // before its write began (behind the write in flight), and how long from then to its reply.
  virtual void on_round_trip(std::chrono::nanoseconds queued, std::chrono::nanoseconds answered) {
    (void)queued;
    (void)answered;
  }

 protected:
  ~ConnectionEvents() = default;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Called with the reply, or with nullptr when the connection closes before it arrives.
  using ReplyHandler = std::function<void(Reply* reply)>;
  using PushHandler = std::function<void(Reply& reply)>;

  // `tls`: the client context for rediss://, null for plain TCP; it must outlive this object.
  Connection(const Strand& strand, boost::asio::ssl::context* tls, ConnectionEvents& events);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts connecting to `to`; with TLS, then the handshake, which sends `server_name` as SNI
  // (unless it is an IP address) and checks the certificate against it. Ends with
  // events.on_connect().
  void connect(const boost::asio::ip::tcp::endpoint& to, const std::string& server_name);
  // False once closed, failed or lost.
  bool is_open() const { return open_; }
  // Queues a command, written as soon as the connection allows. `on_reply` runs exactly once
  // (see ReplyHandler); an empty one means the command has no reply of its own. False (and no
  // callback) if the connection is not open.
  bool send(const std::vector<std::string>& args, ReplyHandler on_reply);
  void set_push_handler(PushHandler on_push) { on_push_ = std::move(on_push); }
  // Closes now: waiting handlers run with nullptr, no event follows. Safe inside a handler.
  void close();
  // Why the connection failed or was lost, for logs.
  const std::string& error() const { return error_; }

 private:
  using Tcp = boost::asio::ip::tcp;
  using TlsStream = boost::asio::ssl::stream<Tcp::socket>;

  Tcp::socket& socket() { return tls_ ? tls_->next_layer() : plain_; }
  void on_tcp_connected();
  void on_established();
  void read();
  void write();
  void deliver(Reply& reply);
  void fail(std::string why);
  void shut();

  ConnectionEvents* events_;
  Tcp::socket plain_;             // the stream for plain TCP
  std::optional<TlsStream> tls_;  // the stream for TLS (its socket is the next layer)
  std::string server_name_;
  bool name_rejected_ = false;  // the certificate did not match server_name_
  bool open_ = true;
  bool established_ = false;  // connected (and handshaken): reads and writes may run
  bool writing_ = false;
  std::string queued_;   // formatted commands not yet handed to a write
  std::string sending_;  // the bytes of the write in flight
  // A command waiting for its reply, and when it was queued and its write began (timer_now:
  // these time real I/O).
  struct Waiting {
    ReplyHandler handler;
    SteadyTime queued;
    SteadyTime written;
  };
  std::deque<Waiting> waiting_;
  std::size_t unwritten_ = 0;  // the last entries of waiting_ whose bytes are still in queued_
  PushHandler on_push_;
  ReplyParser parser_;
  std::array<char, 16 * 1024> read_buffer_;
  std::string error_;
};

}  // namespace wg::redis::detail
