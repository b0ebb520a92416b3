#include "upstream/connection.hpp"

#include <sys/socket.h>
#include <sys/types.h>

#include <boost/asio/strand.hpp>

#include <cerrno>

namespace wg::upstream {

Connection::Connection(const boost::asio::any_io_executor& ex,
                       boost::asio::ssl::context* tls_context) {
  auto strand = boost::asio::make_strand(ex);
  if (tls_context) {
    tls_.emplace(strand, *tls_context);
  } else {
    plain_.emplace(strand);
  }
}

bool Connection::peer_gone() {
  auto& socket = tcp().socket();
  if (!socket.is_open()) return true;
  char byte = 0;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK);
  // 0 = orderly close; > 0 = unsolicited bytes (a TLS close_notify, a late 408...).
  return true;
}

}  // namespace wg::upstream
