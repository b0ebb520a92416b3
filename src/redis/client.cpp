#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "redis/client_impl.hpp"
#include "redis/cluster_impl.hpp"
#include "widget_gateway/common/error.hpp"

namespace wg::redis {
namespace detail {

namespace asio = boost::asio;

ClientImpl::ClientImpl(asio::any_io_executor ex, Settings settings, RandomSource& random,
                       Clock& clock, bool cluster_node)
    : Link(std::move(ex), std::move(settings), cluster_node ? "cluster node" : "client", random),
      cluster_node_(cluster_node),
      clock_(clock),
      first_live_(pending_.end()),
      timer_(strand()) {
  if (this->settings().one_io_thread) {
    const asio::any_io_executor inner = strand().get_inner_executor();
    if (const auto* own = inner.target<asio::io_context::executor_type>()) own_thread_ = *own;
  }
}

ClientImpl::~ClientImpl() {
  // Only reached with work left if the event loop stopped before stop() could run: the
  // waiting operations are being torn down with it, so drop their handlers unrun.
  destroying_ = true;
  close_connection_now();
}

void ClientImpl::submit(std::vector<std::string> args, Completion done, bool asking) {
  if (own_thread_ && own_thread_->running_in_this_thread()) {
    return do_submit(std::move(args), std::move(done), asking);
  }
  asio::post(strand(), [self = std::static_pointer_cast<ClientImpl>(shared_from_this()),
                        args = std::move(args), done = std::move(done), asking]() mutable {
    self->do_submit(std::move(args), std::move(done), asking);
  });
}

void ClientImpl::do_submit(std::vector<std::string> args, Completion done, bool asking) {
  if (stopping()) return done(wg::errc::shutting_down, {});
  const auto deadline = timer_now() + settings().command_timeout;
  if (started() && !attempted_) {
    // Started a moment ago: the first attempt ends within connect_timeout, up or down.
    if (held_.size() >= settings().max_pending) {
      report_error(ErrorKind::overloaded);
      return done(wg::errc::redis_overloaded, {});
    }
    held_.push_back(Held{std::move(args), std::move(done), deadline, asking});
    return;
  }
  send(std::move(args), std::move(done), deadline, asking);
}

void ClientImpl::on_first_attempt_done() {
  attempted_ = true;
  auto held = std::move(held_);
  held_.clear();
  const auto now = timer_now();
  for (Held& h : held) {
    if (stopping()) {
      h.done(wg::errc::shutting_down, {});
    } else if (h.deadline <= now) {
      report_error(ErrorKind::timeout);
      h.done(wg::errc::redis_timeout, {});
    } else {
      send(std::move(h.args), std::move(h.done), h.deadline, h.asking);
    }
  }
}

void ClientImpl::send(std::vector<std::string> args, Completion done, SteadyTime deadline,
                      bool asking) {
  Connection* conn = usable_connection();
  if (conn == nullptr) {
    report_error(ErrorKind::down);
    return done(wg::errc::redis_down, {});
  }
  if (pending_.size() >= settings().max_pending) {
    report_error(ErrorKind::overloaded);
    return done(wg::errc::redis_overloaded, {});
  }

  auto it = pending_.insert(pending_.end(), Pending{this, {}, deadline, std::move(done)});
  it->self = it;
  Pending* p = &*it;
  // ASKING's reply (+OK) needs no one: the command's own reply tells.
  static const std::vector<std::string> kAsking{"ASKING"};
  if ((asking && !conn->send(kAsking, [](Reply*) {})) ||
      !conn->send(args, [p](Reply* reply) { p->owner->on_reply(*p, reply); })) {
    Completion failed = std::move(it->done);
    pending_.erase(it);
    report_error(ErrorKind::down);
    return failed(wg::errc::redis_down, {});
  }
  if (first_live_ == pending_.end()) first_live_ = it;
  arm_timer();
}

void ClientImpl::on_reply(Pending& p, Reply* reply) {
  if (reply != nullptr) {
    consecutive_timeouts_ = 0;
    note_reply(*reply);  // a late reply tells about the server too
  }
  // Off the list before its waiter runs: the waiter may resume at once, on this thread, and
  // send its next command, or drop the last reference to this client.
  Completion done = std::move(p.done);
  if (first_live_ == p.self) ++first_live_;
  pending_.erase(p.self);
  // Completed by its timeout already, or dropped unrun with the client.
  if (!done || destroying_) return;
  auto self = shared_from_this();
  if (reply != nullptr) {
    if (is_failure(*reply)) report_error(classify_error_reply(reply->str));
    complete(std::move(done), {}, std::move(*reply));
  } else if (stopping()) {
    complete(std::move(done), wg::errc::shutting_down);
  } else {
    // The connection went away before the reply: the command may or may not have run.
    report_error(ErrorKind::down);
    complete(std::move(done), wg::errc::redis_down);
  }
}

bool ClientImpl::is_failure(const Reply& reply) const {
  return reply.is_error() &&
         !(cluster_node_ && classify_error_reply(reply.str) == ErrorKind::moved);
}

void ClientImpl::note_reply(const Reply& reply) {
  const auto now = clock_.steady_now();
  if (!is_failure(reply)) {
    if (now >= unhealthy_until_) healthy_.store(true, std::memory_order_release);
    return;
  }
  healthy_.store(false, std::memory_order_release);
  if (is_server_condition(classify_error_reply(reply.str))) {
    unhealthy_until_ = now + settings().unhealthy_hold;
  }
}

void ClientImpl::fail(Pending& p, std::error_code ec, ErrorKind kind) {
  if (!destroying_) report_error(kind);
  complete(p, ec);
}

void ClientImpl::complete(Pending& p, std::error_code ec, Reply reply) {
  complete(std::move(p.done), ec, std::move(reply));
}

void ClientImpl::complete(Completion done, std::error_code ec, Reply reply) {
  if (destroying_) return;
  done(ec, std::move(reply));
}

void ClientImpl::arm_timer() {
  if (timer_armed_ || first_live_ == pending_.end()) return;
  timer_armed_ = true;
  timer_.expires_at(first_live_->deadline);
  timer_.async_wait([self = std::static_pointer_cast<ClientImpl>(shared_from_this())](
                        boost::system::error_code ec) {
    self->timer_armed_ = false;
    if (!ec) self->on_timer();
  });
}

void ClientImpl::on_timer() {
  // Deadlines grow along the list, so the expired commands are a prefix of the live ones.
  auto now = timer_now();
  while (first_live_ != pending_.end() && first_live_->deadline <= now) {
    auto expired = first_live_++;
    fail(*expired, wg::errc::redis_timeout, ErrorKind::timeout);
    ++consecutive_timeouts_;
  }
  if (consecutive_timeouts_ >= settings().max_consecutive_timeouts) {
    consecutive_timeouts_ = 0;
    // A server that answers nothing for this long is as good as gone; a fresh connection
    // also discards the backlog of late replies.
    drop_connection("commands timed out");
  }
  arm_timer();
}

asio::awaitable<bool> ClientImpl::on_open(SteadyTime) {
  consecutive_timeouts_ = 0;
  co_return true;
}

void ClientImpl::on_stopped() {
  // The connection is closed already, so its commands got shutting_down; only held ones wait.
  timer_.cancel();
  auto held = std::move(held_);
  held_.clear();
  for (Held& h : held) h.done(wg::errc::shutting_down, {});
}

}  // namespace detail

namespace asio = boost::asio;

namespace {

std::shared_ptr<detail::Backend> make_backend(asio::any_io_executor ex, Settings settings,
                                              RandomSource& random, Clock& clock) {
  if (settings.cluster) {
    return std::make_shared<detail::ClusterImpl>(std::move(ex), std::move(settings), random, clock);
  }
  return std::make_shared<detail::ClientImpl>(std::move(ex), std::move(settings), random, clock);
}

}  // namespace

Client::Client(asio::any_io_executor ex, Settings settings, RandomSource& random, Clock& clock)
    : impl_(make_backend(std::move(ex), std::move(settings), random, clock)) {}

Client::~Client() {
  impl_->detach_callbacks();
  impl_->stop();
}

void Client::start() {
  impl_->start();
}
void Client::stop() {
  impl_->stop();
}
bool Client::connected() const noexcept {
  return impl_->connected();
}
bool Client::healthy() const noexcept {
  return impl_->healthy();
}

void Client::on_state_change(std::function<void(bool)> listener) {
  impl_->on_state_change(std::move(listener));
}
void Client::on_round_trip(RoundTripListener listener) {
  impl_->on_round_trip(std::move(listener));
}
void Client::on_error(std::function<void(ErrorKind)> listener) {
  impl_->on_error(std::move(listener));
}
void Client::use_primary(std::string host, std::uint16_t port) {
  impl_->use_primary(std::move(host), port);
}

namespace {

using CommandResult = std::tuple<std::error_code, Reply>;

// Starts the operation outside any coroutine body: GCC 12 destroys non-trivial temporaries of
// a co_await expression twice, so the co_await below only sees a named awaitable.
asio::awaitable<CommandResult> start_command(std::weak_ptr<detail::Backend> weak,
                                             std::vector<std::string> args) {
  auto token = asio::as_tuple(asio::use_awaitable);
  return asio::async_initiate<decltype(token), void(std::error_code, Reply)>(
      [](auto handler, std::weak_ptr<detail::Backend> weak, std::vector<std::string> args) {
        // Resume on the waiter's executor, and keep it from running out of work meanwhile.
        // Dispatched: a waiter whose executor runs on this thread (a worker's coroutine, not a
        // strand) resumes at once rather than at the back of the worker's queue.
        auto work = asio::prefer(asio::get_associated_executor(handler),
                                 asio::execution::outstanding_work.tracked);
        detail::Completion done([handler = std::move(handler), work = std::move(work)](
                                    std::error_code ec, Reply reply) mutable {
          asio::dispatch(work, asio::append(std::move(handler), ec, std::move(reply)));
        });
        if (auto impl = weak.lock()) {
          impl->submit(std::move(args), std::move(done));
        } else {
          done(wg::errc::shutting_down, {});
        }
      },
      token, std::move(weak), std::move(args));
}

}  // namespace

asio::awaitable<std::pair<std::error_code, Reply>> Client::command(std::vector<std::string> args) {
  // Only a weak reference travels with the operation: a waiting coroutine must not keep the
  // client alive (it would own itself through the pending list).
  asio::awaitable<CommandResult> op = start_command(impl_, std::move(args));
  auto [ec, reply] = co_await std::move(op);
  co_return std::pair{ec, std::move(reply)};
}

asio::awaitable<void> observe_time(Client& client, FleetClock& fleet) {
  const WallTime sent = fleet.local().wall_now();
  std::vector<std::string> args{"TIME"};
  auto [ec, reply] = co_await client.command(std::move(args));
  const WallTime received = fleet.local().wall_now();
  if (ec || reply.type != Reply::Type::array || reply.elements.size() != 2) co_return;
  if (auto redis_time = redis_time_of(reply.elements[0].str, reply.elements[1].str)) {
    fleet.observe(*redis_time, sent, received);
  }
}

}  // namespace wg::redis
