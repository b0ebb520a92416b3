#pragma once
// How transport and protocol errors of one upstream exchange become wg::errc outcomes. Pure;
// one place so the client's phases (connect, handshake, write, read) map alike.

#include <boost/system/error_code.hpp>

#include <system_error>

namespace wg::upstream {

// Resolve or TCP connect: the deadline → upstream_timeout, anything else →
// upstream_connect_failed.
std::error_code map_connect_error(const boost::system::error_code& ec);

// TLS handshake: a rejected certificate → upstream_tls, the deadline → upstream_timeout,
// anything else → upstream_connect_failed.
std::error_code map_handshake_error(const boost::system::error_code& ec, bool certificate_rejected);

// Writing the request: the deadline → upstream_timeout, anything else → upstream_closed.
std::error_code map_write_error(const boost::system::error_code& ec);

// Reading the response: the deadline → upstream_timeout; a body over the limit →
// upstream_invalid_body; any other failure once the head was read (EOF or reset mid-body, a
// bad chunk) → upstream_invalid_body (truncated); before that → upstream_closed.
std::error_code map_read_error(const boost::system::error_code& ec, bool header_done);

}  // namespace wg::upstream
