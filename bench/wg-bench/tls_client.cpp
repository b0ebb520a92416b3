#include "wg-bench/tls_client.hpp"

#include <openssl/ssl.h>

#include <stdexcept>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>

namespace wg::bench {
namespace {

namespace ssl = boost::asio::ssl;

bool is_ip_address(const std::string& name) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  return !ec;
}

}  // namespace

TlsClient::TlsClient(const LoadOptions& options, std::string_view alpn)
    : context_(ssl::context::tls_client), alpn_(alpn) {
  context_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  const std::string& name =
      options.tls_server_name.empty() ? options.target.address : options.tls_server_name;
  if (!options.tls_ca_file.empty()) {
    context_.load_verify_file(options.tls_ca_file);  // throws: a start-up failure
    context_.set_verify_mode(ssl::verify_peer);
    // Stateless once built: safe to call from every io thread at once.
    context_.set_verify_callback(ssl::host_name_verification(name));
  } else {
    context_.set_verify_mode(ssl::verify_none);
  }
  std::string wire(1, static_cast<char>(alpn_.size()));
  wire += alpn_;
  if (SSL_CTX_set_alpn_protos(context_.native_handle(),
                              reinterpret_cast<const unsigned char*>(wire.data()),
                              static_cast<unsigned>(wire.size())) != 0) {
    throw std::runtime_error("TLS: cannot set ALPN " + alpn_);
  }
  if (!options.tls_server_name.empty() && !is_ip_address(options.tls_server_name)) {
    sni_ = options.tls_server_name;
  }
}

bool TlsClient::prepare(SSL* ssl) const {
  return sni_.empty() || SSL_set_tlsext_host_name(ssl, sni_.c_str()) == 1;
}

bool TlsClient::protocol_accepted(SSL* ssl) const {
  const unsigned char* selected = nullptr;
  unsigned length = 0;
  SSL_get0_alpn_selected(ssl, &selected, &length);
  const std::string_view got(reinterpret_cast<const char*>(selected), selected ? length : 0);
  if (got.empty()) return alpn_ != "h2";
  return got == alpn_;
}

}  // namespace wg::bench
