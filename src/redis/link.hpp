#pragma once
// The connection lifecycle shared by Client and Subscriber: resolve, connect (and TLS
// handshake), authenticate and select the database, set up the role's session (on_open),
// report up/down, and reconnect with exponential backoff and jitter until stopped. One
// coroutine (run) drives it on the link's strand.
//
// Ownership: the handle (Client/Subscriber) holds a shared_ptr; the run coroutine and posted
// work hold more while they are pending, and all of them end after stop(). No object stores a
// handler that refers back to itself.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::redis::detail {

// Deadlines that arm a timer (commands, connects, backoff pauses, the cluster's map refreshes)
// read wg::timer_now() (clock.hpp); what only compares times (the health hold) reads the Clock
// the client is given.

// What a link connects to: a data node (the configured server, the primary the sentinels name,
// a cluster node), or one sentinel itself (settings.endpoint names it), to hear what it
// announces.
enum class Peer { data, sentinel };

class Link : public std::enable_shared_from_this<Link>, private ConnectionEvents {
 public:
  // Throws std::invalid_argument when a TLS file cannot be used.
  Link(boost::asio::any_io_executor ex, Settings settings, std::string role, RandomSource& random,
       Peer peer = Peer::data);
  virtual ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Thread-safe; both post to the strand. start() once; stop() is final.
  void start();
  void stop();
  bool connected() const noexcept { return up_.load(std::memory_order_acquire); }
  void on_state_change(std::function<void(bool)> listener);
  void on_error(std::function<void(ErrorKind)> listener);
  void on_round_trip(Client::RoundTripListener listener);
  // Sentinel mode (ignored otherwise), thread-safe: the sentinels announced `host:port` as the
  // primary. A connection up on another server is dropped now, and the next connection goes
  // there, without a pause.
  void use_primary(std::string host, std::uint16_t port);
  // From the handle's destructor, any thread: no listener runs after this returns.
  void detach_callbacks();

  const Strand& strand() const { return strand_; }

 protected:
  using SteadyTime = std::chrono::steady_clock::time_point;

  const Settings& settings() const { return settings_; }
  // Strand only. True after stop() ran.
  bool stopping() const { return stopping_; }
  // Strand only. True once start() ran.
  bool started() const { return started_; }
  // Strand only. The connection if it is established and set up (connected() may lag).
  Connection* usable_connection() const {
    return up_.load(std::memory_order_relaxed) && conn_ && conn_->is_open() ? conn_.get() : nullptr;
  }
  // Strand only, for on_open: the connection being set up, if still open.
  Connection* current_connection() const {
    return conn_ && conn_->is_open() ? conn_.get() : nullptr;
  }
  // Strand only. Tells the error listeners.
  void report_error(ErrorKind kind);
  // Strand only. Closes the connection now (its pending callbacks run with null replies) and
  // lets the run loop report it down and reconnect.
  void drop_connection(std::string_view reason);
  // Strand only, for the most-derived destructor: closes the connection while the derived
  // object, which its callbacks reach, still exists.
  void close_connection_now();
  // Held while a handle-supplied callback runs; detach_callbacks() takes it too.
  std::recursive_mutex& callback_mutex() { return callback_mutex_; }
  bool callbacks_detached() const { return callbacks_detached_; }  // with callback_mutex()

  // Sets up a fresh, authenticated connection before it is reported up (SUBSCRIBE). Runs
  // inside the run coroutine; `deadline` bounds it.
  virtual boost::asio::awaitable<bool> on_open(SteadyTime deadline) = 0;
  // After stop(): fail whatever still waits.
  virtual void on_stopped() {}
  // After the first connection attempt, whichever way it went (connected() tells).
  virtual void on_first_attempt_done() {}

  // For on_open: sends one command on the new connection and waits for its reply; nullopt on
  // timeout, disconnect or stop.
  boost::asio::awaitable<std::optional<Reply>> exec_setup(std::vector<std::string> args,
                                                          SteadyTime deadline);
  // Wakes the run coroutine if it waits in wait_until.
  void notify() { wake_.cancel(); }
  // Suspends the run coroutine until pred() holds or `deadline` passes; returns pred().
  // Callers pass a named predicate: GCC 12 destroys non-trivial temporaries of a co_await
  // expression twice (a lambda converted to std::function in the call would be one).
  using Predicate = std::function<bool()>;
  boost::asio::awaitable<bool> wait_until(const Predicate& pred, SteadyTime deadline);

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<bool> connect_once(std::string& reason);
  boost::asio::awaitable<bool> open_session(std::string& reason, SteadyTime deadline);
  boost::asio::awaitable<bool> setup_command(std::vector<std::string> args, std::string_view name,
                                             std::string& reason, SteadyTime deadline);
  // Sentinel mode: asks the sentinels in turn for the primary's address; nullopt (with
  // `reason`) when none answers.
  boost::asio::awaitable<std::optional<std::pair<std::string, std::uint16_t>>> locate_primary(
      std::string& reason, SteadyTime deadline);
  // Opens conn_ to host:port (resolve, connect, TLS handshake) within `deadline`.
  boost::asio::awaitable<bool> open_transport(const std::string& host, std::uint16_t port,
                                              const std::string& server_name, std::string& reason,
                                              SteadyTime deadline);
  boost::asio::awaitable<std::optional<boost::asio::ip::address>> resolve(const std::string& host,
                                                                          std::uint16_t port,
                                                                          std::string& reason,
                                                                          SteadyTime deadline);
  using Address = std::pair<std::string, std::uint16_t>;

  // Sentinels often share the data nodes' credentials; one without a password refuses AUTH
  // with an error, which is no reason not to use it: what it answers next tells.
  boost::asio::awaitable<void> offer_credentials(SteadyTime deadline);
  // Asks TIME and tells settings_.fleet_clock (docs/clocks.md).
  boost::asio::awaitable<void> observe_time(SteadyTime deadline);
  void follow(Address primary);
  void do_stop();
  void set_state(bool up, std::string_view reason);
  void first_attempt_done();
  std::chrono::milliseconds next_delay(std::chrono::milliseconds& backoff);

  void on_connect(bool ok) override;
  void on_disconnect() override;
  void on_round_trip(std::chrono::nanoseconds queued, std::chrono::nanoseconds answered) override;

  Strand strand_;
  Settings settings_;
  std::string role_;
  std::string endpoint_text_;
  std::string server_name_;                                 // checked in the TLS certificate
  std::unique_ptr<boost::asio::ssl::context> tls_context_;  // rediss:// only
  RandomSource& random_;
  const Peer peer_;

  std::atomic<bool> up_{false};
  bool started_ = false;
  bool attempted_ = false;  // the first connection attempt is over
  bool stopping_ = false;
  bool reported_up_ = false;       // last state given to listeners
  std::optional<bool> logged_up_;  // last state logged, to log changes only
  std::string logged_reason_;      // and why it was down
  std::shared_ptr<Connection> conn_;
  std::optional<bool> connect_result_;
  std::size_t address_turn_ = 0;   // which resolved address to try next
  std::size_t sentinel_turn_ = 0;  // which sentinel to ask first
  std::size_t seed_turn_ = 0;      // cluster mode (subscriber): which seed to connect to
  // Sentinel mode: the primary conn_ is (being) connected to, and one the sentinels announced
  // since (+switch-master) that the next attempt connects to instead of asking them.
  Address target_;
  std::optional<Address> announced_;
  std::string down_reason_;
  boost::asio::steady_timer wake_;
  boost::asio::ip::tcp::resolver resolver_;

  std::recursive_mutex callback_mutex_;
  bool callbacks_detached_ = false;
  std::vector<std::function<void(bool)>> listeners_;
  std::vector<std::function<void(ErrorKind)>> error_listeners_;
  std::vector<Client::RoundTripListener> round_trip_listeners_;
};

}  // namespace wg::redis::detail
