#pragma once
// The Client's state on its strand: commands in flight, their deadlines, the reply handler,
// the health that error replies tell, and the commands held for the first connection.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <list>
#include <memory>
#include <optional>
#include <system_error>
#include <vector>

#include "redis/backend.hpp"
#include "redis/link.hpp"

namespace wg::redis::detail {

// One connection's commands. As a cluster node (`cluster_node`), MOVED and ASK replies are
// routing answers for the cluster to follow, not errors of this connection.
class ClientImpl final : public Link, public Backend {
 public:
  // `clock` times the health hold (unhealthy_hold); command deadlines follow the timer's
  // time (timer_now).
  ClientImpl(boost::asio::any_io_executor ex, Settings settings, RandomSource& random, Clock& clock,
             bool cluster_node = false);
  ~ClientImpl() override;

  void start() override { Link::start(); }
  void stop() override { Link::stop(); }
  bool connected() const noexcept override { return Link::connected(); }
  bool healthy() const noexcept override { return healthy_.load(std::memory_order_acquire); }
  // Any thread: posts to the strand, where the command is checked, sent and tracked. On the
  // one thread of a one_io_thread client, where the strand can be running nothing else, that
  // happens at once.
  void submit(std::vector<std::string> args, Completion done) override {
    submit(std::move(args), std::move(done), false);
  }
  // `asking`: preceded by ASKING on the same connection, nothing in between (cluster ASK).
  void submit(std::vector<std::string> args, Completion done, bool asking);
  void on_state_change(std::function<void(bool)> listener) override {
    Link::on_state_change(std::move(listener));
  }
  void on_error(std::function<void(ErrorKind)> listener) override {
    Link::on_error(std::move(listener));
  }
  void on_round_trip(Client::RoundTripListener listener) override {
    Link::on_round_trip(std::move(listener));
  }
  void detach_callbacks() override { Link::detach_callbacks(); }
  void use_primary(std::string host, std::uint16_t port) override {
    Link::use_primary(std::move(host), port);
  }
  // "host:port" as configured, for the cluster's map.
  const Endpoint& endpoint() const { return settings().endpoint; }

 private:
  struct Pending {
    ClientImpl* owner;
    std::list<Pending>::iterator self;
    SteadyTime deadline;
    Completion done;  // empty once completed by a timeout; the entry stays until its reply
                      // (or the connection's end) reaches on_reply, which holds its address
  };

  // A command submitted before the first connection attempt is over (the client just
  // started): it waits for that attempt rather than failing at once.
  struct Held {
    std::vector<std::string> args;
    Completion done;
    SteadyTime deadline;
    bool asking;
  };

  boost::asio::awaitable<bool> on_open(SteadyTime deadline) override;
  void on_stopped() override;
  void on_first_attempt_done() override;

  void do_submit(std::vector<std::string> args, Completion done, bool asking);
  void send(std::vector<std::string> args, Completion done, SteadyTime deadline, bool asking);
  // An error reply that counts against this connection (not a redirection a cluster follows).
  bool is_failure(const Reply& reply) const;
  void on_reply(Pending& p, Reply* reply);
  void note_reply(const Reply& reply);
  void fail(Pending& p, std::error_code ec, ErrorKind kind);
  void complete(Pending& p, std::error_code ec, Reply reply = {});
  // Runs the waiter of a command that is off the list already.
  void complete(Completion done, std::error_code ec, Reply reply = {});
  void arm_timer();
  void on_timer();

  const bool cluster_node_;
  // one_io_thread: the executor of the one thread allowed to skip the strand's queue.
  std::optional<boost::asio::io_context::executor_type> own_thread_;
  Clock& clock_;
  std::vector<Held> held_;      // before the first attempt is over; bounded by max_pending
  bool attempted_ = false;      // the first connection attempt is over
  std::list<Pending> pending_;  // in sending order, which is also reply and deadline order
  std::list<Pending>::iterator first_live_;  // first entry not yet completed (end() if none)
  boost::asio::steady_timer timer_;
  bool timer_armed_ = false;
  int consecutive_timeouts_ = 0;
  bool destroying_ = false;
  std::atomic<bool> healthy_{true};
  SteadyTime unhealthy_until_{};  // a server condition was reported: no recovery before this
};

}  // namespace wg::redis::detail
