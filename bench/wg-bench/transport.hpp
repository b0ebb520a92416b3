#pragma once
// How a load-runner connection moves bytes: plain TCP or TLS over TCP, with one interface so a
// connection kind is written once as a template over its transport (no virtual call or
// type-erased handler per request). Opening includes the TLS handshake and the ALPN check,
// so a failed handshake fails the open (a connect error). Closing never waits for the peer:
// no TLS close_notify, the socket just closes (what a hard stop wants; the servers measured
// do not care).
//
// Contract: one open at a time; open() only once every operation of the previous connection
// has completed (the TLS stream is rebuilt on each open, which must not happen under a
// pending operation). All calls on the owning worker's io thread.

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <optional>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include "wg-bench/run_stats.hpp"
#include "wg-bench/tls_client.hpp"

namespace wg::bench {

// What a failed read or write of either transport counts as (a cut-off by the deadline sweep
// shows as operation_aborted).
inline ErrorKind classify_io_error(const boost::system::error_code& ec, bool writing) {
  namespace net = boost::asio;
  if (ec == net::error::operation_aborted) return ErrorKind::timeout;
  if (ec == net::error::eof || ec == net::error::connection_reset ||
      ec == net::error::broken_pipe || ec == net::error::connection_aborted ||
      ec == net::ssl::error::stream_truncated) {
    return ErrorKind::closed;
  }
  return writing ? ErrorKind::write : ErrorKind::read;
}

class PlainTransport {
 public:
  using tcp = boost::asio::ip::tcp;
  using error_code = boost::system::error_code;

  PlainTransport(boost::asio::io_context& ioc, TlsClient*) : socket_(ioc) {}

  template <class Handler>  // void(error_code)
  void async_open(const tcp::endpoint& endpoint, Handler handler) {
    socket_.async_connect(endpoint,
                          [this, handler = std::move(handler)](const error_code& ec) mutable {
                            if (!ec) {
                              error_code ignored;
                              socket_.set_option(tcp::no_delay(true), ignored);
                            }
                            handler(ec);
                          });
  }
  template <class Buffers, class Handler>  // void(error_code, std::size_t)
  void async_write(const Buffers& buffers, Handler&& handler) {
    boost::asio::async_write(socket_, buffers, std::forward<Handler>(handler));
  }
  template <class Buffers, class Handler>  // void(error_code, std::size_t)
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    socket_.async_read_some(buffers, std::forward<Handler>(handler));
  }
  void close() {
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }
  // The peer ended the connection cleanly (a close-delimited body may be complete).
  static bool is_end_of_stream(const error_code& ec) { return ec == boost::asio::error::eof; }
  // A read takes everything the socket holds (up to the buffer): nothing is left behind it.
  static std::size_t read_buffered(const boost::asio::mutable_buffer&) { return 0; }

 private:
  tcp::socket socket_;
};

class TlsTransport {
 public:
  using tcp = boost::asio::ip::tcp;
  using error_code = boost::system::error_code;
  using Stream = boost::asio::ssl::stream<tcp::socket>;

  TlsTransport(boost::asio::io_context& ioc, TlsClient* tls) : ioc_(ioc), tls_(*tls) {}

  template <class Handler>  // void(error_code)
  void async_open(const tcp::endpoint& endpoint, Handler handler) {
    stream_.emplace(ioc_, tls_.context());
    if (!tls_.prepare(stream_->native_handle())) {
      boost::asio::post(ioc_, [handler = std::move(handler)]() mutable {
        handler(boost::asio::error::invalid_argument);
      });
      return;
    }
    stream_->next_layer().async_connect(
        endpoint, [this, handler = std::move(handler)](const error_code& ec) mutable {
          if (ec) return handler(ec);
          error_code ignored;
          stream_->next_layer().set_option(tcp::no_delay(true), ignored);
          stream_->async_handshake(
              Stream::client, [this, handler = std::move(handler)](const error_code& ec) mutable {
                if (!ec && !tls_.protocol_accepted(stream_->native_handle())) {
                  return handler(boost::asio::error::no_protocol_option);
                }
                handler(ec);
              });
        });
  }
  template <class Buffers, class Handler>
  void async_write(const Buffers& buffers, Handler&& handler) {
    boost::asio::async_write(*stream_, buffers, std::forward<Handler>(handler));
  }
  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    stream_->async_read_some(buffers, std::forward<Handler>(handler));
  }
  void close() {
    if (!stream_) return;
    error_code ignored;
    stream_->next_layer().shutdown(tcp::socket::shutdown_both, ignored);
    stream_->next_layer().close(ignored);
  }
  // A server that closes without close_notify (most do after an answer without keep-alive).
  static bool is_end_of_stream(const error_code& ec) {
    return ec == boost::asio::error::eof || ec == boost::asio::ssl::error::stream_truncated;
  }
  // After a read completed and before the next one starts: more plaintext from the bytes that
  // read already took from the socket. A TLS read returns at most one record, and one socket
  // read (up to 17 KB) often brings several (a server that answers each HTTP/2 stream in its
  // own record); this hands them out without a completion handler per record and without the
  // socket. 0 when a whole record is not there yet, or on any error or close_notify: the next
  // async_read_some meets it again and reports it. Whatever SSL has to send back meanwhile
  // (a KeyUpdate answer) stays in the stream's output and goes out with the next write.
  std::size_t read_buffered(const boost::asio::mutable_buffer& buffer) {
    if (!stream_ || buffer.size() == 0) return 0;
    SSL* ssl = stream_->native_handle();
    if (SSL_pending(ssl) == 0 && SSL_has_pending(ssl) == 0 &&
        BIO_ctrl_pending(SSL_get_rbio(ssl)) == 0) {
      return 0;
    }
    ERR_clear_error();
    const int n = SSL_read(ssl, buffer.data(),
                           static_cast<int>(std::min<std::size_t>(buffer.size(), INT_MAX)));
    if (n > 0) return static_cast<std::size_t>(n);
    ERR_clear_error();
    return 0;
  }

 private:
  boost::asio::io_context& ioc_;
  TlsClient& tls_;
  std::optional<Stream> stream_;
};

}  // namespace wg::bench
