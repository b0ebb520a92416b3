#include "wg-bench/probe.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

namespace wg::bench {

std::string connect_error(const Target& target, std::chrono::milliseconds timeout) {
  namespace net = boost::asio;
  net::io_context ioc(1);
  net::ip::tcp::socket socket(ioc);
  net::steady_timer timer(ioc, timeout);
  boost::system::error_code result = net::error::would_block;
  socket.async_connect(net::ip::tcp::endpoint(net::ip::make_address(target.address), target.port),
                       [&](const boost::system::error_code& ec) {
                         result = ec;
                         timer.cancel();
                       });
  timer.async_wait([&](const boost::system::error_code& ec) {
    if (!ec) socket.close();
  });
  ioc.run();
  if (result == net::error::operation_aborted) return "no connection within the timeout";
  return result ? result.message() : std::string();
}

}  // namespace wg::bench
