#include "redis/link.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <utility>

#include "redis/tls_context.hpp"
#include "widget_gateway/common/log.hpp"

namespace wg::redis::detail {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// State of one setup command; shared by the waiting coroutine and the reply handler, which
// may run after the coroutine gave up.
struct SetupCall {
  std::function<void()> wake;
  bool done = false;
  std::optional<Reply> reply;
};

}  // namespace

Link::Link(asio::any_io_executor ex, Settings settings, std::string role, RandomSource& random,
           Peer peer)
    : strand_(asio::make_strand(ex)),
      settings_(std::move(settings)),
      role_(std::move(role)),
      // A sentinel has no database.
      endpoint_text_(peer == Peer::sentinel
                         ? settings_.endpoint.host + ":" + std::to_string(settings_.endpoint.port) +
                               " (sentinel)"
                         : settings_.endpoint.to_string()),
      server_name_(settings_.tls.server_name.empty() ? settings_.endpoint.host
                                                     : settings_.tls.server_name),
      tls_context_(settings_.endpoint.tls ? make_tls_context(settings_.tls) : nullptr),
      random_(random),
      peer_(peer),
      wake_(strand_),
      resolver_(strand_) {}

Link::~Link() {
  close_connection_now();
}

void Link::start() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->started_ || self->stopping_) return;
    self->started_ = true;
    asio::co_spawn(self->strand_, self->run(), asio::detached);
  });
}

void Link::stop() {
  asio::post(strand_, [self = shared_from_this()] { self->do_stop(); });
}

void Link::on_state_change(std::function<void(bool)> listener) {
  std::lock_guard lock(callback_mutex_);
  if (!callbacks_detached_) listeners_.push_back(std::move(listener));
}

void Link::on_error(std::function<void(ErrorKind)> listener) {
  std::lock_guard lock(callback_mutex_);
  if (!callbacks_detached_) error_listeners_.push_back(std::move(listener));
}

void Link::on_round_trip(Client::RoundTripListener listener) {
  std::lock_guard lock(callback_mutex_);
  if (!callbacks_detached_) round_trip_listeners_.push_back(std::move(listener));
}

void Link::on_round_trip(std::chrono::nanoseconds queued, std::chrono::nanoseconds answered) {
  std::lock_guard lock(callback_mutex_);
  for (std::size_t i = 0; i < round_trip_listeners_.size() && !callbacks_detached_; ++i) {
    round_trip_listeners_[i](queued, answered);
  }
}

void Link::use_primary(std::string host, std::uint16_t port) {
  asio::post(strand_, [self = shared_from_this(), primary = Address(std::move(host), port)] {
    self->follow(primary);
  });
}

void Link::follow(Address primary) {
  if (!settings_.sentinel || stopping_) return;
  if (usable_connection() != nullptr && target_ == primary) return;  // there already
  announced_ = std::move(primary);
  // The old primary may stay writable for seconds (a manual failover): what is written there
  // now is lost. Commands in flight on it complete as redis_down.
  if (usable_connection() != nullptr) drop_connection("the sentinels announced another primary");
  notify();  // ends a pause between attempts
}

void Link::detach_callbacks() {
  std::lock_guard lock(callback_mutex_);
  callbacks_detached_ = true;
  listeners_.clear();
  error_listeners_.clear();
  round_trip_listeners_.clear();
}

void Link::report_error(ErrorKind kind) {
  if (settings_.sentinel && kind == ErrorKind::readonly) {
    // The primary became a replica (a failover): leave it, and ask the sentinels again.
    asio::post(strand_, [self = shared_from_this()] {
      self->drop_connection("READONLY: no longer the primary");
    });
  }
  std::lock_guard lock(callback_mutex_);
  for (std::size_t i = 0; i < error_listeners_.size() && !callbacks_detached_; ++i) {
    error_listeners_[i](kind);
  }
}

void Link::do_stop() {
  if (stopping_) return;
  stopping_ = true;
  resolver_.cancel();
  if (conn_) conn_->close();  // pending commands complete (on_stopped's rules apply)
  on_stopped();
  notify();
}

void Link::drop_connection(std::string_view reason) {
  if (!conn_ || !conn_->is_open()) return;
  down_reason_ = std::string(reason);
  up_.store(false, std::memory_order_release);
  conn_->close();
  notify();
}

void Link::close_connection_now() {
  if (conn_) conn_->close();
}

void Link::on_connect(bool ok) {
  connect_result_ = ok;
  notify();
}

void Link::on_disconnect() {
  // Fail fast from now on; the run coroutine reports the change when it wakes.
  up_.store(false, std::memory_order_release);
  if (conn_) down_reason_ = conn_->error();
  notify();
}

awaitable<bool> Link::wait_until(const Predicate& pred, SteadyTime deadline) {
  while (!pred()) {
    wake_.expires_at(deadline);
    auto [ec] = co_await wake_.async_wait(use_tuple);
    if (!ec) break;  // deadline; operation_aborted means notify(): check again
  }
  co_return pred();
}

awaitable<std::optional<Reply>> Link::exec_setup(std::vector<std::string> args,
                                                 SteadyTime deadline) {
  auto call = std::make_shared<SetupCall>();
  call->wake = [this] { notify(); };
  auto on_reply = [call](Reply* reply) {
    call->done = true;
    if (reply != nullptr) call->reply = std::move(*reply);
    call->wake();
  };
  if (!conn_ || !conn_->send(args, std::move(on_reply))) co_return std::nullopt;
  Predicate answered = [&] { return call->done || stopping_ || !conn_ || !conn_->is_open(); };
  co_await wait_until(answered, deadline);
  // The handler may still run later (with nullptr when the connection closes); it only touches
  // `call`, and wakes nobody any more.
  call->wake = [] {};
  co_return std::move(call->reply);
}

awaitable<std::optional<asio::ip::address>> Link::resolve(const std::string& host,
                                                          std::uint16_t port, std::string& reason,
                                                          SteadyTime deadline) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (!ec) co_return address;

  // The resolver runs getaddrinfo on a private thread; its result comes back on the strand.
  struct Outcome {
    bool done = false;
    boost::system::error_code ec;
    std::vector<asio::ip::address> ips;
  };
  auto outcome = std::make_shared<Outcome>();
  resolver_.async_resolve(
      host, std::to_string(port),
      [self = shared_from_this(), outcome](boost::system::error_code ec,
                                           asio::ip::tcp::resolver::results_type results) {
        outcome->done = true;
        outcome->ec = ec;
        // IPv4 first: "localhost" often resolves to ::1 too, and servers often bind IPv4 only.
        for (int v6 = 0; v6 < 2 && !ec; ++v6) {
          for (const auto& entry : results) {
            auto address = entry.endpoint().address();
            if (address.is_v6() == (v6 == 1)) outcome->ips.push_back(address);
          }
        }
        self->notify();
      });
  Predicate resolved = [&] { return outcome->done || stopping_; };
  co_await wait_until(resolved, deadline);
  if (!outcome->done) {
    resolver_.cancel();
    reason = "resolving " + host + " timed out";
    co_return std::nullopt;
  }
  if (outcome->ips.empty()) {
    reason = "cannot resolve " + host + ": " + outcome->ec.message();
    co_return std::nullopt;
  }
  // Each failed attempt moves on to the next address.
  co_return outcome->ips[address_turn_ % outcome->ips.size()];
}

awaitable<bool> Link::open_transport(const std::string& host, std::uint16_t port,
                                     const std::string& server_name, std::string& reason,
                                     SteadyTime deadline) {
  auto address = co_await resolve(host, port, reason, deadline);
  if (!address || stopping_) co_return false;

  connect_result_.reset();
  down_reason_.clear();
  ++address_turn_;  // undone by the caller if this address works
  ConnectionEvents& events = *this;
  conn_ = std::make_shared<Connection>(strand_, tls_context_.get(), events);
  conn_->connect(asio::ip::tcp::endpoint(*address, port), server_name);
  Predicate connected = [this] { return connect_result_.has_value() || stopping_; };
  co_await wait_until(connected, deadline);
  if (stopping_) co_return false;
  if (!connect_result_) {
    reason = tls_context_ ? "connect or TLS handshake timed out" : "connect timed out";
    conn_->close();
    co_return false;
  }
  if (!*connect_result_) {
    reason = conn_->error();
    co_return false;
  }
  co_return true;
}

awaitable<std::optional<std::pair<std::string, std::uint16_t>>> Link::locate_primary(
    std::string& reason, SteadyTime deadline) {
  const SentinelSettings& sentinel = *settings_.sentinel;  // settings_ never changes
  for (std::size_t i = 0; i < sentinel.sentinels.size() && !stopping_; ++i) {
    // Copies, not references: GCC 12 mishandles references that live across a co_await in a
    // loop.
    const std::string host =
        sentinel.sentinels[(sentinel_turn_ + i) % sentinel.sentinels.size()].first;
    const std::uint16_t port =
        sentinel.sentinels[(sentinel_turn_ + i) % sentinel.sentinels.size()].second;
    std::string why;
    const std::string name = settings_.tls.server_name.empty() ? host : settings_.tls.server_name;
    if (!co_await open_transport(host, port, name, why, deadline)) {
      reason = "sentinel " + host + ":" + std::to_string(port) + ": " + why;
      continue;
    }
    co_await offer_credentials(deadline);
    std::vector<std::string> ask{std::string("SENTINEL"), std::string("GET-MASTER-ADDR-BY-NAME"),
                                 sentinel.master};
    auto reply = co_await exec_setup(std::move(ask), deadline);
    if (conn_) conn_->close();
    conn_.reset();
    if (reply && reply->type == Reply::Type::array && reply->elements.size() == 2) {
      const unsigned long primary_port = std::strtoul(reply->elements[1].str.c_str(), nullptr, 10);
      if (primary_port > 0 && primary_port < 65536) {
        sentinel_turn_ =
            (sentinel_turn_ + i) % sentinel.sentinels.size();  // ask it first next time
        co_return std::pair{reply->elements[0].str, static_cast<std::uint16_t>(primary_port)};
      }
    }
    reason = "sentinel " + host + ":" + std::to_string(port) + " names no primary \"" +
             sentinel.master + "\"" + (reply && reply->is_error() ? ": " + reply->str : "");
  }
  co_return std::nullopt;
}

awaitable<bool> Link::connect_once(std::string& reason) {
  auto deadline = timer_now() + settings_.connect_timeout;
  std::string host = settings_.endpoint.host;
  std::uint16_t port = settings_.endpoint.port;
  std::string name = server_name_;
  if (settings_.cluster && !settings_.cluster->seeds.empty()) {
    // Any node will do (a subscriber: messages reach every node); a failed one passes the turn.
    const auto& seeds = settings_.cluster->seeds;
    const std::size_t turn = seed_turn_++;
    host = seeds[turn % seeds.size()].first;
    port = seeds[turn % seeds.size()].second;
    if (settings_.tls.server_name.empty()) name = host;
    endpoint_text_ = host + ":" + std::to_string(port) + " (cluster)";
  }
  if (settings_.sentinel) {
    // A primary the sentinels announced is taken as announced (once: should it fail, the next
    // attempt asks them again); otherwise they are asked, before every connect.
    std::optional<Address> primary = std::exchange(announced_, std::nullopt);
    if (!primary) primary = co_await locate_primary(reason, deadline);
    if (!primary || stopping_) co_return false;
    target_ = *primary;
    host = primary->first;
    port = primary->second;
    if (settings_.tls.server_name.empty()) name = host;
    endpoint_text_ = host + ":" + std::to_string(port) + " (" + settings_.sentinel->master + ")";
  }
  if (!co_await open_transport(host, port, name, reason, deadline)) co_return false;
  bool ok = co_await open_session(reason, deadline);
  if (stopping_) co_return false;
  if (ok && settings_.sentinel) {
    // The sentinels' answer may be a moment old: only the primary itself will do.
    std::vector<std::string> role{std::string("ROLE")};
    auto reply = co_await exec_setup(std::move(role), deadline);
    ok = reply && reply->type == Reply::Type::array && !reply->elements.empty() &&
         reply->elements[0].str == "master";
    if (!ok) reason = "the server the sentinels named is not the primary (yet)";
  }
  if (ok && settings_.fleet_clock != nullptr && peer_ != Peer::sentinel) {
    // Redis's clock, before anything this connection carries is timed by it.
    co_await observe_time(deadline);
  }
  if (ok) {
    // The role's setup gets a command timeout of its own, on top of the connect budget.
    ok = co_await on_open(timer_now() + settings_.command_timeout);
    if (stopping_) co_return false;
    if (!ok) reason = conn_->is_open() ? "session setup failed" : conn_->error();
  }
  if (announced_ && *announced_ == target_) announced_.reset();  // heard again meanwhile
  if (ok && announced_) {
    ok = false;  // the next attempt, at once, goes there
    reason = "the sentinels announced another primary";
  }
  if (!ok || !conn_->is_open()) {
    if (ok) reason = conn_->error();
    conn_->close();
    co_return false;
  }
  --address_turn_;                      // this address works: stay with it
  if (settings_.cluster) --seed_turn_;  // and with this node
  co_return true;
}

// AUTH and SELECT before anything else, on every connection. Without either, a PING finds out
// whether the server wants credentials (NOAUTH) before the connection counts as up.
awaitable<bool> Link::open_session(std::string& reason, SteadyTime deadline) {
  const Endpoint& endpoint = settings_.endpoint;
  if (peer_ == Peer::sentinel) {
    co_await offer_credentials(deadline);
    std::vector<std::string> ping{std::string("PING")};  // NOAUTH if it wanted other credentials
    co_return co_await setup_command(std::move(ping), "PING", reason, deadline);
  }
  if (!endpoint.password.empty()) {
    std::vector<std::string> auth{std::string("AUTH")};
    if (!endpoint.user.empty()) auth.push_back(endpoint.user);
    auth.push_back(endpoint.password);
    if (!co_await setup_command(std::move(auth), "AUTH", reason, deadline)) co_return false;
  }
  if (endpoint.db != 0) {
    std::vector<std::string> select{std::string("SELECT"), std::to_string(endpoint.db)};
    co_return co_await setup_command(std::move(select), "SELECT", reason, deadline);
  }
  if (endpoint.password.empty()) {
    std::vector<std::string> ping{std::string("PING")};
    co_return co_await setup_command(std::move(ping), "PING", reason, deadline);
  }
  co_return true;
}

awaitable<void> Link::observe_time(SteadyTime deadline) {
  FleetClock& fleet = *settings_.fleet_clock;
  const WallTime sent = fleet.local().wall_now();
  std::vector<std::string> time{std::string("TIME")};
  auto reply = co_await exec_setup(std::move(time), deadline);
  const WallTime received = fleet.local().wall_now();
  // A server that refuses TIME (an ACL) leaves the offset as it was: not a reason to fail.
  if (!reply || reply->type != Reply::Type::array || reply->elements.size() != 2) co_return;
  if (auto redis_time = redis_time_of(reply->elements[0].str, reply->elements[1].str)) {
    fleet.observe(*redis_time, sent, received);
  }
}

awaitable<void> Link::offer_credentials(SteadyTime deadline) {
  const Endpoint& endpoint = settings_.endpoint;
  if (endpoint.password.empty()) co_return;
  std::vector<std::string> auth{std::string("AUTH")};
  if (!endpoint.user.empty()) auth.push_back(endpoint.user);
  auth.push_back(endpoint.password);
  co_await exec_setup(std::move(auth), deadline);
}

awaitable<bool> Link::setup_command(std::vector<std::string> args, std::string_view name,
                                    std::string& reason, SteadyTime deadline) {
  auto reply = co_await exec_setup(std::move(args), deadline);
  if (!reply) {
    reason = conn_ && !conn_->is_open() && !conn_->error().empty()
                 ? conn_->error()
                 : std::string(name) + " timed out";
    co_return false;
  }
  if (reply->is_error()) {
    // The server's words name the problem best: "WRONGPASS invalid username-password pair...".
    reason = reply->str;
    report_error(classify_error_reply(reply->str));
    co_return false;
  }
  co_return true;
}

std::chrono::milliseconds Link::next_delay(std::chrono::milliseconds& backoff) {
  // Half fixed, half random: reconnecting clients spread out instead of arriving together.
  auto delay = std::chrono::milliseconds(static_cast<long long>(
      static_cast<double>(backoff.count()) * (0.5 + 0.5 * random_.uniform01())));
  backoff = std::min(backoff * 2, settings_.reconnect_max);
  return std::max(delay, std::chrono::milliseconds(1));
}

awaitable<void> Link::run() {
  auto self = shared_from_this();  // this object lives at least as long as the loop
  auto backoff = settings_.reconnect_min;
  while (!stopping_) {
    std::string reason;
    if (co_await connect_once(reason)) {
      backoff = settings_.reconnect_min;
      set_state(true, {});
      first_attempt_done();
      Predicate closed = [this] { return stopping_ || !conn_->is_open(); };
      co_await wait_until(closed, SteadyTime::max());
      conn_.reset();
      set_state(false, stopping_ ? "stopped" : down_reason_);
    } else {
      conn_.reset();
      if (!stopping_) set_state(false, reason);
      first_attempt_done();
    }
    if (stopping_) break;
    auto delay = next_delay(backoff);
    // An announced primary is worth trying at once: the old one may be taking writes that will
    // be lost.
    Predicate pause_over = [this] { return stopping_ || announced_.has_value(); };
    co_await wait_until(pause_over, timer_now() + delay);
  }
  conn_.reset();
  set_state(false, "stopped");
}

void Link::first_attempt_done() {
  if (attempted_) return;
  attempted_ = true;
  on_first_attempt_done();
}

void Link::set_state(bool up, std::string_view reason) {
  // up_ may already be false (on_disconnect fails commands fast); listeners follow reported_up_.
  up_.store(up, std::memory_order_release);
  bool was = reported_up_;
  reported_up_ = up;
  // One redis_down per outage (and one redis_up when it ends); a new reason while down (refused,
  // then WRONGPASS) is a debug line, so an outage reads as one line per connection.
  const std::string& owner = settings_.owner;
  if (logged_up_ != up) {
    logged_up_ = up;
    logged_reason_ = up ? std::string() : std::string(reason);
    if (up) {
      log::info("redis_up", {{"endpoint", endpoint_text_}, {"role", role_}, {"owner", owner}});
    } else if (stopping_) {
      log::info(
          "redis_down",
          {{"endpoint", endpoint_text_}, {"role", role_}, {"owner", owner}, {"reason", reason}});
    } else {
      log::warn(
          "redis_down",
          {{"endpoint", endpoint_text_}, {"role", role_}, {"owner", owner}, {"reason", reason}});
    }
  } else if (!up && reason != logged_reason_) {
    logged_reason_ = std::string(reason);
    log::debug(
        "redis_still_down",
        {{"endpoint", endpoint_text_}, {"role", role_}, {"owner", owner}, {"reason", reason}});
  }
  if (was == up) return;
  std::lock_guard lock(callback_mutex_);
  for (std::size_t i = 0; i < listeners_.size() && !callbacks_detached_; ++i) listeners_[i](up);
}

}  // namespace wg::redis::detail
