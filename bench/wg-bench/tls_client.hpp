#pragma once
// TLS for the load runner's connections (load_context.hpp): one client context per run, shared
// read-only by every io thread (OpenSSL allows SSL_new on one SSL_CTX from many threads), and
// what each new connection sets on its own SSL object (SNI) and checks after the handshake
// (the ALPN protocol). No session resumption: connections are long-lived and reconnects rare.

#include <string>
#include <string_view>

#include <boost/asio/ssl/context.hpp>

#include "wg-bench/load_runner.hpp"

namespace wg::bench {

class TlsClient {
 public:
  // alpn: the one protocol offered, "http/1.1" or "h2". With options.tls_ca_file the server's
  // chain is verified against it and its name against tls_server_name (or the target's
  // address); without one nothing is verified. Throws on an unreadable CA file.
  TlsClient(const LoadOptions& options, std::string_view alpn);

  boost::asio::ssl::context& context() { return context_; }

  // On a connection's fresh SSL object, before the handshake: SNI (a name only, never an IP).
  // False when OpenSSL refused it.
  bool prepare(SSL* ssl) const;
  // After the handshake: the server picked the protocol offered (for HTTP/1.1 a server without
  // ALPN is fine too; HTTP/2 needs "h2").
  bool protocol_accepted(SSL* ssl) const;

 private:
  boost::asio::ssl::context context_;
  std::string alpn_;
  std::string sni_;  // empty for an IP address
};

}  // namespace wg::bench
