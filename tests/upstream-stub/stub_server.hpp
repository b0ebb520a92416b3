#pragma once
// An in-process stand-in for the upstream Widget Reviews Data API: HTTP/1.1 (or HTTPS) with
// keep-alive, many connections, the test controls of StubHandler, and faults acted out on the
// wire. Used by the widget-upstream-stub executable and directly by tests.
//
// Threading: runs on the io_context given to the constructor, which may be run by any number of
// threads; each connection has its own strand. start() and stop() are thread-safe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "upstream-stub/dataset.hpp"
#include "upstream-stub/stub_handler.hpp"

namespace wg::stub {

namespace detail {
struct ServerState;
}

struct StubOptions {
  std::string host = "127.0.0.1";  // an IP literal, or "localhost"
  std::uint16_t port = 8081;       // 0 = ephemeral
  std::size_t widgets = 100;
  std::uint64_t seed = 1;
  // Both set: serve HTTPS (PEM certificate chain and private key).
  std::string tls_cert_file;
  std::string tls_key_file;

  std::chrono::milliseconds idle_timeout{30'000};     // TLS handshake, or waiting for a request
  std::chrono::milliseconds write_timeout{30'000};    // writing one response
  std::chrono::milliseconds shutdown_timeout{2'000};  // TLS close_notify exchange
  std::chrono::milliseconds hang_limit{300'000};      // a "hang" fault closes after this at most
  std::size_t header_limit = 16 * 1024;
  std::size_t body_limit = 64 * 1024;
  std::size_t cache_bytes = Dataset::kDefaultCacheBytes;
  bool prerender = false;  // render the data set (as far as cache_bytes allows) before listening
  // Upstream's daily refresh, in seconds since the epoch (--expires-at): 200 answers on the API
  // routes then carry Cache-Control: public, max-age=N and Expires for that moment, or for the
  // same time of the first later day still ahead once it has passed (next_expiry). Unset: no
  // such headers.
  std::optional<std::int64_t> expires_at;
};

// The moment an answer dated `now` expires: the first of expires_at + k days (k >= 0) after
// `now` (seconds since the epoch). So max-age is at least 1, and copies fetched after the
// refresh keep until the next day's.
std::int64_t next_expiry(std::int64_t expires_at, std::int64_t now);

class StubServer {
 public:
  // Builds the data set plan and binds the listener. Throws (boost::system::system_error) when
  // the address cannot be bound or the TLS files cannot be loaded. Accepts nothing before
  // start().
  StubServer(boost::asio::io_context& ioc, StubOptions options);
  // Calls stop(); pending operations finish on the io_context.
  ~StubServer();
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;

  void start();
  // Closes the listener and every open connection (hung ones included). Idempotent. The
  // io_context runs out of stub work shortly after.
  void stop();

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  std::uint16_t port() const { return local_endpoint().port(); }
  bool tls() const;

  StubHandler& handler();
  const Dataset& dataset() const;

 private:
  // Shared with the accept loop and the sessions, which may outlive this object briefly.
  std::shared_ptr<detail::ServerState> state_;
};

}  // namespace wg::stub
