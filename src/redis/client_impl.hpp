#pragma once
// The Client's state on its strand: commands in flight, their deadlines, the reply handler,
// the health that error replies tell, and the commands held for the first connection.

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <list>
#include <memory>
#include <system_error>
#include <vector>

#include "redis/link.hpp"

namespace wg::redis::detail {

// A move-only, type-erased "call once" completion, invoked on the client's strand. It forwards
// the result to the waiting operation's own executor.
class Completion {
 public:
  Completion() = default;
  template <class F>
  explicit Completion(F f) : impl_(std::make_unique<Model<F>>(std::move(f))) {}
  explicit operator bool() const { return impl_ != nullptr; }
  void operator()(std::error_code ec, Reply reply) {
    auto impl = std::move(impl_);
    impl->call(ec, std::move(reply));
  }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual void call(std::error_code ec, Reply reply) = 0;
  };
  template <class F>
  struct Model final : Concept {
    explicit Model(F f) : f(std::move(f)) {}
    void call(std::error_code ec, Reply reply) override { f(ec, std::move(reply)); }
    F f;
  };
  std::unique_ptr<Concept> impl_;
};

class ClientImpl final : public Link {
 public:
  ClientImpl(boost::asio::any_io_executor ex, Settings settings, RandomSource& random);
  ~ClientImpl() override;

  // Any thread: posts to the strand, where the command is checked, sent and tracked.
  void submit(std::vector<std::string> args, Completion done);
  bool healthy() const noexcept { return healthy_.load(std::memory_order_acquire); }

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
  };

  boost::asio::awaitable<bool> on_open(SteadyTime deadline) override;
  void on_stopped() override;
  void on_first_attempt_done() override;

  void do_submit(std::vector<std::string> args, Completion done);
  void send(std::vector<std::string> args, Completion done, SteadyTime deadline);
  void on_reply(Pending& p, Reply* reply);
  void note_reply(const Reply& reply);
  void fail(Pending& p, std::error_code ec, ErrorKind kind);
  void complete(Pending& p, std::error_code ec, Reply reply = {});
  void arm_timer();
  void on_timer();

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
