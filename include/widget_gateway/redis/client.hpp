#pragma once
// An asynchronous Redis client: one hiredis connection driven by the Asio event loop, with
// per-command deadlines, a bound on commands in flight, and reconnection with backoff.
// Nothing here ever blocks a thread.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "widget_gateway/common/random.hpp"

namespace wg::redis {

// One reply, converted from hiredis' redisReply (RESP2). Strings are binary-safe.
struct Reply {
  enum class Type { nil, status, error, integer, string, array };
  Type type = Type::nil;
  long long integer = 0;
  std::string str;  // status, error and string replies
  std::vector<Reply> elements;

  bool is_nil() const { return type == Type::nil; }
  bool is_error() const { return type == Type::error; }
};

struct Endpoint {
  std::string host;  // a name or an address; IPv6 without brackets
  std::uint16_t port = 6379;
  int db = 0;
  // host:port/db, IPv6 in brackets; for logs.
  std::string to_string() const;
};

// redis://host[:port][/db]; host may be [v6]. Credentials, other schemes, a bad port or db
// give nullopt.
std::optional<Endpoint> parse_url(std::string_view url);

struct Settings {
  Endpoint endpoint;
  std::chrono::milliseconds command_timeout{500};  // from submission to reply
  std::chrono::milliseconds connect_timeout{500};  // resolve + TCP connect + SELECT/SUBSCRIBE
  std::chrono::milliseconds reconnect_min{100};    // first backoff; doubles up to reconnect_max
  std::chrono::milliseconds reconnect_max{5000};
  // Commands in flight on the connection; a timed-out one counts until its late reply arrives.
  std::size_t max_pending = 10000;
  // This many consecutive command timeouts mark the connection dead: it is dropped and
  // re-established.
  int max_consecutive_timeouts = 3;
};

namespace detail {
class ClientImpl;
class SubscriberImpl;
}  // namespace detail

// Owns one hiredis async connection, used only on its own strand. All public members are
// thread-safe. start() once, then stop() (or destroy) once.
class Client {
 public:
  // `random` draws the reconnect jitter; it must outlive the client's background work.
  Client(boost::asio::any_io_executor ex, Settings settings,
         RandomSource& random = DefaultRandom::instance());
  // Stops (as stop()). No state listener runs after the destructor returns.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Connects in the background and keeps reconnecting with exponential backoff (+jitter)
  // until stop().
  void start();
  // Disconnects; commands in flight complete with errc::shutting_down, later ones too.
  void stop();
  bool connected() const noexcept;

  // Sends one command (binary-safe arguments) and waits for its reply. Completes on the
  // caller's executor with:
  //   {}, reply                    a reply, including an error reply (Reply::Type::error);
  //   errc::redis_down             not connected (nothing sent), or the connection dropped;
  //   errc::redis_timeout          no reply within command_timeout (a late reply is dropped);
  //   errc::redis_overloaded       max_pending commands already in flight;
  //   errc::shutting_down          the client was stopped.
  // Commands issued while connected are pipelined on the one connection. The coroutine may
  // outlive the client: it then completes with shutting_down.
  boost::asio::awaitable<std::pair<std::error_code, Reply>> command(std::vector<std::string> args);

  // Called on the client's strand whenever the connection goes up (true) or down (false).
  void on_state_change(std::function<void(bool connected)> listener);

 private:
  std::shared_ptr<detail::ClientImpl> impl_;
};

}  // namespace wg::redis
