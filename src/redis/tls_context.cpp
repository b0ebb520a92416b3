#include "redis/tls_context.hpp"

#include <fstream>
#include <stdexcept>
#include <string>

namespace wg::redis::detail {

namespace ssl = boost::asio::ssl;

namespace {

[[noreturn]] void reject(std::string_view key, const std::string& file, std::string_view why) {
  throw std::invalid_argument(std::string(key) + " \"" + file + "\": " + std::string(why));
}

void require_readable(std::string_view key, const std::string& file) {
  if (!std::ifstream(file).good()) reject(key, file, "cannot be read");
}

}  // namespace

std::unique_ptr<ssl::context> make_tls_context(const TlsSettings& tls) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  context->set_verify_mode(ssl::verify_peer);
  // The system store is always trusted; ca_file adds to it (e.g. a private CA).
  context->set_default_verify_paths();
  boost::system::error_code ec;
  if (!tls.ca_file.empty()) {
    require_readable("redis.tls_ca_file", tls.ca_file);
    context->load_verify_file(tls.ca_file, ec);
    if (ec)
      reject("redis.tls_ca_file", tls.ca_file, "no usable certificate (" + ec.message() + ")");
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    throw std::invalid_argument("redis.tls_cert_file and redis.tls_key_file go together");
  }
  if (!tls.cert_file.empty()) {
    require_readable("redis.tls_cert_file", tls.cert_file);
    require_readable("redis.tls_key_file", tls.key_file);
    context->use_certificate_chain_file(tls.cert_file, ec);
    if (ec)
      reject("redis.tls_cert_file", tls.cert_file, "not a certificate (" + ec.message() + ")");
    context->use_private_key_file(tls.key_file, ssl::context::pem, ec);
    if (ec) reject("redis.tls_key_file", tls.key_file, "not a usable key (" + ec.message() + ")");
  }
  return context;
}

}  // namespace wg::redis::detail
