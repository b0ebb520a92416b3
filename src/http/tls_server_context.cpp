#include "widget_gateway/http/tls_server_context.hpp"

#include <openssl/ssl.h>

#include <stdexcept>

namespace wg::http {
namespace ssl = boost::asio::ssl;

namespace {

// TLS 1.2 suites with forward secrecy and AEAD only (TLS 1.3's are all of that already), as in
// Mozilla's "intermediate" profile.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// TLS 1.3's three suites, AES-128 first as in Mozilla's profiles (OpenSSL's own order starts
// with AES-256, and the server's preference decides).
constexpr const char* kTls13Suites =
    "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384";

// ALPN wire format: length-prefixed names, in our order of preference.
constexpr unsigned char kAlpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  // The server's preference wins: h2 when the client offers it.
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kAlpn, sizeof kAlpn, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no common protocol: go on without ALPN (HTTP/1.1)
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

std::shared_ptr<ssl::context> make_context(const std::string& cert_file,
                                           const std::string& key_file,
                                           const std::string& section) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1 ||
      SSL_CTX_set_ciphersuites(native, kTls13Suites) != 1) {
    throw std::runtime_error("TLS: the cipher list is not supported by this OpenSSL");
  }
  // Resumption: a server-side session cache per context, and tickets (OpenSSL's default).
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
  SSL_CTX_sess_set_cache_size(native, 20000);
  static constexpr unsigned char kSessionContext[] = "widget-gateway";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  SSL_CTX_set_num_tickets(native, 1);
  SSL_CTX_set_alpn_select_cb(native, select_alpn, nullptr);
  if (SSL_CTX_use_certificate_chain_file(native, cert_file.c_str()) != 1) {
    throw std::runtime_error(section + ".tls_cert_file \"" + cert_file +
                             "\": not a PEM certificate chain");
  }
  if (SSL_CTX_use_PrivateKey_file(native, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw std::runtime_error(section + ".tls_key_file \"" + key_file + "\": not a PEM private key");
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    throw std::runtime_error(section + ".tls_key_file \"" + key_file +
                             "\": does not match the certificate");
  }
  return context;
}

}  // namespace

AppProtocol negotiated_protocol(const SSL* ssl) {
  const unsigned char* name = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl, &name, &length);
  return length == 2 && name[0] == 'h' && name[1] == '2' ? AppProtocol::h2 : AppProtocol::http1;
}

TlsServerContext::TlsServerContext(const std::string& cert_file, const std::string& key_file,
                                   std::string section)
    : section_(std::move(section)), context_(make_context(cert_file, key_file, section_)) {}

void TlsServerContext::reload(const std::string& cert_file, const std::string& key_file) {
  auto fresh = make_context(cert_file, key_file, section_);
  std::lock_guard lock(mutex_);
  context_ = std::move(fresh);
}

std::shared_ptr<ssl::context> TlsServerContext::current() const {
  std::lock_guard lock(mutex_);
  return context_;
}

}  // namespace wg::http
