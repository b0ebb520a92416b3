#pragma once
// The upstream base address (`upstream.base_url`) taken apart once at start-up into what
// every request needs: where to connect, what to send as Host, and the path prefix.

#include <cstdint>
#include <string>
#include <string_view>

namespace wg::upstream {

struct BaseUrl {
  bool tls = false;
  std::string host;          // to resolve, for SNI and certificate checks (no IPv6 brackets)
  bool host_is_name = true;  // false for an IP literal: no SNI then (RFC 6066 §3)
  std::uint16_t port = 0;
  std::string host_header;  // host, plus ":port" when the port is not the scheme's default
  std::string path_prefix;  // "" or "/p" (percent-encoded as written, no trailing slash)
};

// Throws std::invalid_argument naming the problem: a scheme other than http/https, no host,
// user info, a query or a fragment, or a bad port.
BaseUrl parse_base_url(std::string_view text);

}  // namespace wg::upstream
