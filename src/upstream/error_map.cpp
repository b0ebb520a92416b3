#include "upstream/error_map.hpp"

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

#include "widget_gateway/common/error.hpp"

namespace wg::upstream {
namespace {

bool is_deadline(const boost::system::error_code& ec) {
  return ec == boost::beast::error::timeout;
}

}  // namespace

std::error_code map_connect_error(const boost::system::error_code& ec) {
  return is_deadline(ec) ? errc::upstream_timeout : errc::upstream_connect_failed;
}

std::error_code map_handshake_error(const boost::system::error_code& ec,
                                    bool certificate_rejected) {
  if (certificate_rejected) return errc::upstream_tls;
  return map_connect_error(ec);
}

std::error_code map_write_error(const boost::system::error_code& ec) {
  return is_deadline(ec) ? errc::upstream_timeout : errc::upstream_closed;
}

std::error_code map_read_error(const boost::system::error_code& ec, bool header_done) {
  if (is_deadline(ec)) return errc::upstream_timeout;
  if (ec == boost::beast::http::error::body_limit) return errc::upstream_invalid_body;
  return header_done ? errc::upstream_invalid_body : errc::upstream_closed;
}

}  // namespace wg::upstream
