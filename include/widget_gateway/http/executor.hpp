#pragma once
// The listeners' executor, named by its concrete type. Every listener's io_context is run by
// one thread (docs/threading.md), so its connections, their timers and their coroutines need
// no strand, and an operation carries a plain io_context executor (a pointer) rather than
// Asio's type-erased any_io_executor, which is copied, compared and dispatched through a table
// on every read, write and wait.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

namespace wg::http {

using Executor = boost::asio::io_context::executor_type;
// A listener's coroutine: the sessions', and a request handler's.
template <class T>
using Task = boost::asio::awaitable<T, Executor>;
inline constexpr boost::asio::use_awaitable_t<Executor> use_task{};
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
using SteadyTimer = boost::asio::basic_waitable_timer<
    std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;

}  // namespace wg::http
