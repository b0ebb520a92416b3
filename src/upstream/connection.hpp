#pragma once
// One upstream connection, plain or TLS, with its read buffer. Owned by exactly one get() at a
// time or by the idle pool; never shared. Its I/O objects run on their own strand, as Beast's
// tcp_stream requires when the io_context has several threads.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <optional>

#include "widget_gateway/common/clock.hpp"

namespace wg::upstream {

class Connection {
 public:
  using TlsStream = boost::asio::ssl::stream<boost::beast::tcp_stream>;

  // `tls_context` null = plain TCP; otherwise it must outlive the connection.
  Connection(const boost::asio::any_io_executor& ex, boost::asio::ssl::context* tls_context);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  boost::beast::tcp_stream& tcp() { return tls_ ? tls_->next_layer() : *plain_; }
  TlsStream* tls() { return tls_ ? &*tls_ : nullptr; }
  boost::beast::flat_buffer& buffer() { return buffer_; }

  // Set by the certificate verification callback when it rejects the peer.
  bool certificate_rejected = false;
  // The socket's or TLS's error when opening failed (Result::cause).
  std::error_code open_failure;

  // For an idle pooled connection: true if the peer has closed it, reset it, or sent bytes
  // nobody asked for (all of which make it unusable). A non-blocking peek at the socket,
  // valid only while no operation is pending on it.
  bool peer_gone();

  // While pooled: since when it has been idle, and how long it may stay idle and still be
  // used (Client::Impl::idle_limit).
  SteadyTime idle_since{};
  std::chrono::milliseconds reusable_for{0};

 private:
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<TlsStream> tls_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace wg::upstream
