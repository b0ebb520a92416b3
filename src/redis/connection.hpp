#pragma once
// One hiredis asynchronous connection driven by the Asio event loop.
//
// hiredis asks for read/write readiness through its `ev` hooks; each hook is mapped to an
// async_wait on a stream_descriptor that shares the context's socket, and readiness is handed
// back with redisAsyncHandleRead/Write. hiredis owns the socket: the descriptor is released
// (never closed) in the cleanup hook, which hiredis calls before closing the socket.
//
// Threading: everything, including construction and destruction, happens on one strand.

#include <hiredis/async.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wg::redis::detail {

using Strand = boost::asio::strand<boost::asio::any_io_executor>;

// Receives a connection's events on the strand, from inside hiredis callbacks: an
// implementation must not close or destroy the connection synchronously.
class ConnectionEvents {
 public:
  // Exactly once per connection (unless close() comes first): the TCP connect's outcome.
  virtual void on_connect(bool ok) = 0;
  // Once, after a successful connect, when hiredis loses the connection (peer closed, I/O
  // error, protocol error). Not called for close().
  virtual void on_disconnect() = 0;

 protected:
  ~ConnectionEvents() = default;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Starts a non-blocking connect to a numeric address (hiredis would otherwise resolve a
  // name with a blocking getaddrinfo). Returns nullptr with `error` set if it fails at once.
  static std::shared_ptr<Connection> open(const Strand& strand, const std::string& ip,
                                          std::uint16_t port, ConnectionEvents& events,
                                          std::string& error);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // False once the hiredis context is gone (closed, failed or disconnected).
  bool is_open() const { return ac_ != nullptr; }
  // Queues a binary-safe command; `fn(ac, reply, privdata)` runs exactly once per reply: with
  // the reply, or with a null reply when the context goes away first. For SUBSCRIBE it runs
  // once per message and confirmation. False (and no callback) if the context cannot take it.
  bool send(const std::vector<std::string>& args, redisCallbackFn* fn, void* privdata);
  // Frees the context now: pending callbacks run with null replies, no event follows. Must not
  // be called from inside a hiredis callback.
  void close();
  // hiredis' description of the last failure.
  const std::string& error() const { return error_; }

 private:
  Connection(const Strand& strand, ConnectionEvents& events);

  static void add_read(void* data);
  static void del_read(void* data);
  static void add_write(void* data);
  static void del_write(void* data);
  static void cleanup(void* data);
  static void connect_callback(const redisAsyncContext* ac, int status);
  static void disconnect_callback(const redisAsyncContext* ac, int status);

  void wait_read();
  void wait_write();

  boost::asio::posix::stream_descriptor descriptor_;
  ConnectionEvents* events_;
  redisAsyncContext* ac_ = nullptr;
  bool want_read_ = false;  // what hiredis asked for
  bool want_write_ = false;
  bool read_waiting_ = false;  // an async_wait is outstanding
  bool write_waiting_ = false;
  std::string error_;
};

}  // namespace wg::redis::detail
