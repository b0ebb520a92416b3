#pragma once
// The TLS client context for rediss://: TLS 1.2 or later, the server's chain verified against
// the system store plus an optional CA file, and an optional client certificate.

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis::detail {

// Reads the files now; throws std::invalid_argument naming the config key of a file that
// cannot be read or used.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const TlsSettings& tls);

}  // namespace wg::redis::detail
