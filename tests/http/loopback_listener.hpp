#pragma once
// An HTTP listener on 127.0.0.1 in the test's process, with its own io thread; at the end it
// drains (every session ends before the server and the io_context go) and stops.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <exception>
#include <future>
#include <thread>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/http/request_handler.hpp"
#include "widget_gateway/http/server.hpp"

namespace wg::http::test {

struct LoopbackListener {
  boost::asio::io_context ioc;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  HttpServer server;
  std::uint16_t port = 0;
  std::thread io;

  LoopbackListener(const config::ServerConfig& limits, RequestHandler& handler, const Clock& clock)
      : server(ioc, "public", limits, handler, clock) {
    namespace asio = boost::asio;
    port =
        server.bind(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), false).port();
    server.start();
    io = std::thread([this] { ioc.run(); });
  }
  ~LoopbackListener() {
    std::promise<void> drained;
    boost::asio::co_spawn(ioc, server.drain(std::chrono::seconds(1)),
                          [&drained](std::exception_ptr) { drained.set_value(); });
    drained.get_future().wait();
    work.reset();
    ioc.stop();
    io.join();
  }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;
};

}  // namespace wg::http::test
