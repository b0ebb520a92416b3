#pragma once
// Helpers for running the Redis client's coroutines to completion in tests, always bounded.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis::test {

using namespace std::chrono_literals;
namespace asio = boost::asio;

// Runs `aw` on `ioc` (with `threads` threads) until it completes or `limit` passes.
template <class T>
std::optional<T> run(asio::io_context& ioc, asio::awaitable<T> aw,
                     std::chrono::milliseconds limit = 20s, int threads = 1) {
  // Shared so that a handler outliving a failed (timed out) call never dangles.
  struct State {
    std::optional<T> result;
    std::exception_ptr error;
  };
  auto state = std::make_shared<State>();
  asio::co_spawn(ioc, std::move(aw), [state, &ioc](std::exception_ptr e, T value) {
    state->error = e;
    state->result = std::move(value);
    ioc.stop();
  });
  ioc.restart();
  std::vector<std::thread> extra;
  for (int i = 1; i < threads; ++i) extra.emplace_back([&] { ioc.run_for(limit); });
  ioc.run_for(limit);
  for (auto& t : extra) t.join();
  ioc.restart();
  if (state->error) std::rethrow_exception(state->error);
  return state->result;
}

// Runs `ioc` in short slices until pred() holds or `limit` passes; returns pred().
inline bool run_until(asio::io_context& ioc, const std::function<bool()>& pred,
                      std::chrono::milliseconds limit = 20s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred() && std::chrono::steady_clock::now() < deadline) {
    ioc.restart();
    ioc.run_for(10ms);
  }
  ioc.restart();
  return pred();
}

// One command, run to completion.
inline std::pair<std::error_code, Reply> exec(asio::io_context& ioc, Client& client,
                                              std::vector<std::string> args) {
  auto result = run(ioc, client.command(std::move(args)));
  BOOST_REQUIRE(result.has_value());
  return std::move(*result);
}

}  // namespace wg::redis::test
