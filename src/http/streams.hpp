#pragma once
// The streams a listener's connections run on, on its executor's concrete type (executor.hpp).

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "widget_gateway/http/executor.hpp"

namespace wg::http {

using TcpStream = boost::beast::basic_stream<boost::asio::ip::tcp, Executor>;
using TlsStream = boost::beast::ssl_stream<TcpStream>;

}  // namespace wg::http
