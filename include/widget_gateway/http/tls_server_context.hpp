#pragma once
// A listener's TLS (the public one's, and the admin one's when configured): TLS 1.2+ with
// forward-secret AEAD ciphers, ALPN (h2 first, then http/1.1), server-side session resumption
// (cache and tickets), and the certificate chain and key from PEM files. reload() builds a fresh
// context and swaps it in: connections accepted afterwards use it, open ones keep the one they
// started with (each holds its shared_ptr).

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace wg::http {

// The ALPN protocol a handshake agreed on.
enum class AppProtocol { http1, h2 };
AppProtocol negotiated_protocol(const SSL* ssl);

class TlsServerContext {
 public:
  // Throws std::runtime_error naming the file, and the config keys of `section` ("server",
  // "admin"), when the chain or key cannot be used.
  TlsServerContext(const std::string& cert_file, const std::string& key_file,
                   std::string section = "server");
  // Reads the files again (blocking: call it off the io threads, e.g. on SIGHUP's thread).
  // On failure throws and keeps the current context.
  void reload(const std::string& cert_file, const std::string& key_file);
  std::shared_ptr<boost::asio::ssl::context> current() const;

 private:
  std::string section_;  // whose keys name the files in errors
  mutable std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> context_;
};

}  // namespace wg::http
