#pragma once
// The listeners' executor, named by its concrete type. Every listener's io_context is run by
// one thread (docs/threading.md), so its connections, their timers and their coroutines need
// no strand, and an operation carries a plain io_context executor (a pointer) rather than
// Asio's type-erased any_io_executor, which is copied, compared and dispatched through a table
// on every read, write and wait.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <utility>

namespace wg::http {

using Executor = boost::asio::io_context::executor_type;
// A listener's coroutine: the sessions', and a request handler's.
template <class T>
using Task = boost::asio::awaitable<T, Executor>;
inline constexpr boost::asio::use_awaitable_t<Executor> use_task{};
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
using SteadyTimer = boost::asio::basic_waitable_timer<
    std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;

// Awaits `task`, a coroutine of Asio's default type (the serving core's, Redis's), from a
// listener's coroutine: it runs on the same thread, in a coroutine of its own (one allocation).
template <class T>
Task<T> await_default(boost::asio::awaitable<T> task) {
  const Executor executor = co_await boost::asio::this_coro::executor;
  auto spawned = boost::asio::co_spawn(executor, std::move(task), use_task);
  co_return co_await std::move(spawned);
}

}  // namespace wg::http
