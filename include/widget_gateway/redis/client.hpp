#pragma once
// An asynchronous Redis client: one connection (TCP, or TLS for rediss://) driven by the Asio
// event loop, with per-command deadlines, a bound on commands in flight, and reconnection with
// backoff; in cluster mode one such connection per primary, commands routed by slot. Nothing
// here ever blocks a thread.

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

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/fleet_clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/redis/error_kind.hpp"

namespace wg::redis {

// One reply, as parsed by hiredis' reader (RESP2). Strings are binary-safe.
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
  Endpoint() = default;
  Endpoint(std::string host, std::uint16_t port, int db = 0)
      : host(std::move(host)), port(port), db(db) {}

  std::string host;  // a name or an address; IPv6 without brackets
  std::uint16_t port = 6379;
  int db = 0;
  std::string user;      // ACL user for AUTH; "" = the default user
  std::string password;  // "" = no AUTH
  bool tls = false;      // rediss://
  // host:port/db, IPv6 in brackets; for logs, so never with credentials.
  std::string to_string() const;
};

// redis[s]://[[user]:password@]host[:port][/db]; host may be [v6]; user and password are
// percent-decoded. Other schemes, a bad port or db, or a bad escape give nullopt.
std::optional<Endpoint> parse_url(std::string_view url);

// For rediss://. The system trust store is always used; files are read by the constructor.
struct TlsSettings {
  std::string ca_file;    // extra trusted CAs (PEM)
  std::string cert_file;  // client certificate chain (PEM), with key_file
  std::string key_file;
  std::string server_name;  // verified in the server's certificate (and sent as SNI); "" = host
};

// Sentinel mode: the primary is whatever the sentinels name for `master`, asked before every
// (re)connect; a server that no longer is the primary (READONLY, or ROLE says replica) is left
// and the sentinels are asked again. A primary they announce (SentinelWatcher, use_primary) is
// followed at once.
struct SentinelSettings {
  std::vector<std::pair<std::string, std::uint16_t>> sentinels;  // host, port
  std::string master;
};

// Cluster mode: the slot map is learnt (CLUSTER SLOTS) from the seeds, then from the primaries
// it names; each command goes to its slot's primary, following MOVED and ASK redirections.
struct ClusterSettings {
  std::vector<std::pair<std::string, std::uint16_t>> seeds;  // host, port
  int max_redirects = 5;  // per command; past it the redirection is the reply
  // The map is asked again this often when all is well, and at once after MOVED or a primary
  // going down (then at most every reconnect_min while not every slot has a reachable primary).
  std::chrono::milliseconds refresh_interval{30000};
};

struct Settings {
  // Standalone: the server. Sentinel and cluster mode: only its credentials, db and TLS flag
  // count.
  Endpoint endpoint;
  std::optional<SentinelSettings> sentinel;
  std::optional<ClusterSettings> cluster;
  TlsSettings tls;                                 // used when endpoint.tls
  std::chrono::milliseconds command_timeout{500};  // from submission to reply
  // Resolve + TCP connect + TLS handshake + AUTH + SELECT (SUBSCRIBE then has command_timeout).
  std::chrono::milliseconds connect_timeout{500};
  std::chrono::milliseconds reconnect_min{100};  // first backoff; doubles up to reconnect_max
  std::chrono::milliseconds reconnect_max{5000};
  // Commands in flight on the connection; a timed-out one counts until its late reply arrives.
  std::size_t max_pending = 10000;
  // This many consecutive command timeouts mark the connection dead: it is dropped and
  // re-established.
  int max_consecutive_timeouts = 3;
  // After an error reply that says the server cannot serve this client (auth, readonly, oom,
  // ...: is_server_condition), healthy() stays false at least this long.
  std::chrono::milliseconds unhealthy_hold{10000};
  // Who uses this connection ("worker 0", "control"), named in its log events, so that an
  // operator can tell one worker's lost connection from another's.
  std::string owner = "control";
  // When set, every connection asks Redis's TIME right after its setup, before any command of
  // its users, and tells the fleet clock (docs/clocks.md); must outlive the client.
  FleetClock* fleet_clock = nullptr;
  // Only one thread runs the executor's context, and the client's users are on it (a worker's
  // connection). A command issued there is sent at once instead of waiting in the context's
  // queue behind every ready handler, which on a busy worker is a large part of a round trip.
  bool one_io_thread = false;
};

namespace detail {
class Backend;
class SubscriberImpl;
}  // namespace detail

// Owns one connection (cluster mode: one per primary), used only on its own strand. All public
// members are thread-safe. start() once, then stop() (or destroy) once.
class Client {
 public:
  // `random` draws the reconnect jitter; `clock` times the health hold (unhealthy_hold), so a
  // test can move past it. Command, connect and reconnect deadlines arm Asio timers and follow
  // real time. Both must outlive the client's background work. Throws std::invalid_argument
  // when a TLS file cannot be used.
  Client(boost::asio::any_io_executor ex, Settings settings,
         RandomSource& random = DefaultRandom::instance(), Clock& clock = SystemClock::instance());
  // Stops (as stop()). No state listener runs after the destructor returns.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Connects in the background and keeps reconnecting with exponential backoff (+jitter)
  // until stop().
  void start();
  // Disconnects; commands in flight complete with errc::shutting_down, later ones too.
  void stop();
  // Up: connected, authenticated (AUTH) and in its database (SELECT). Cluster mode: every slot
  // has a primary and every primary's connection is up.
  bool connected() const noexcept;
  // False from an error reply until a later command gets a reply that is not an error; after
  // an error reply saying the server cannot serve this client as configured (NOPERM, READONLY,
  // OOM, LOADING, MOVED, ...: is_server_condition) for at least unhealthy_hold as well. Only
  // error replies count: connected() tells whether the server can be reached at all.
  bool healthy() const noexcept;

  // Sends one command (binary-safe arguments) and waits for its reply. Completes on the
  // caller's executor with:
  //   {}, reply                    a reply, including an error reply (Reply::Type::error);
  //   errc::redis_down             not connected (nothing sent), or the connection dropped;
  //   errc::redis_timeout          no reply within command_timeout (a late reply is dropped);
  //   errc::redis_overloaded       max_pending commands already in flight;
  //   errc::shutting_down          the client was stopped.
  // A command issued before the first connection attempt is over (just after start()) waits
  // for it, at most connect_timeout, then is sent or fails as above; a connection lost later
  // fails commands at once.
  // Commands issued while connected are pipelined on the one connection. The coroutine may
  // outlive the client: it then completes with shutting_down.
  boost::asio::awaitable<std::pair<std::error_code, Reply>> command(std::vector<std::string> args);

  // Called on the client's strand whenever the connection goes up (true) or down (false).
  void on_state_change(std::function<void(bool connected)> listener);
  // Called on the client's strand for every failed command: each error reply (also to AUTH or
  // SELECT while connecting) and each redis_down, redis_timeout or redis_overloaded result.
  // Not for shutting_down, nor for a MOVED or ASK that cluster mode followed.
  void on_error(std::function<void(ErrorKind kind)> listener);
  // Called on the client's strand for every reply to a command: how long the command waited
  // in its connection's output queue before its write began (behind the write in flight), and
  // how long from that write to its reply (the network and Redis).
  using RoundTripListener =
      std::function<void(std::chrono::nanoseconds queued, std::chrono::nanoseconds answered)>;
  void on_round_trip(RoundTripListener listener);
  // Sentinel mode (ignored otherwise): the sentinels announced `host:port` as the primary
  // (+switch-master, heard by a SentinelWatcher). A connection to another server is dropped at
  // once, even if that server still takes writes (commands in flight on it complete with
  // redis_down), and the next connection goes to `host:port`, checked with ROLE, without a
  // backoff pause. Posts to the client's strand.
  void use_primary(std::string host, std::uint16_t port);

 private:
  std::shared_ptr<detail::Backend> impl_;
};

// One TIME exchange on `client`, told to `fleet` (docs/clocks.md); nothing when Redis does not
// answer. The control thread keeps the offset current with it, about once a second.
boost::asio::awaitable<void> observe_time(Client& client, FleetClock& fleet);

}  // namespace wg::redis
