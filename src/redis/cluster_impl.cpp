#include "redis/cluster_impl.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"

namespace wg::redis::detail {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

bool same_address(const Endpoint& endpoint, const std::string& host, std::uint16_t port) {
  return endpoint.port == port && endpoint.host == host;
}

}  // namespace

ClusterImpl::ClusterImpl(asio::any_io_executor ex, Settings settings, RandomSource& random,
                         Clock& clock)
    : strand_(asio::make_strand(ex)),
      settings_(std::move(settings)),
      random_(random),
      clock_(clock),
      wake_(strand_) {
  owner_.fill(kNoOwner);
}

ClusterImpl::~ClusterImpl() {
  // Only reached unstopped if the event loop ended first: the nodes drop their work unrun.
  for (auto& node : nodes_) node->detach_callbacks();
}

void ClusterImpl::start() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->started_ || self->stopping_) return;
    self->started_ = true;
    asio::co_spawn(self->strand_, self->run(), asio::detached);
  });
}

void ClusterImpl::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stopping_) return;
    self->stopping_ = true;
    self->wake_.cancel();
    auto held = std::move(self->held_);
    self->held_.clear();
    for (Command& command : held) command.done(wg::errc::shutting_down, {});
    for (auto& node : self->nodes_) {
      node->detach_callbacks();
      node->stop();
    }
    self->nodes_.clear();
    self->primaries_.clear();
    self->owner_.fill(kNoOwner);
    self->publish_primaries();
    self->update_state();
  });
}

bool ClusterImpl::healthy() const noexcept {
  std::lock_guard lock(snapshot_mutex_);
  return std::all_of(primaries_snapshot_.begin(), primaries_snapshot_.end(),
                     [](const Node& node) { return node->healthy(); });
}

void ClusterImpl::submit(std::vector<std::string> args, Completion done) {
  asio::post(strand_,
             [self = shared_from_this(), args = std::move(args), done = std::move(done)]() mutable {
               self->route(Command{std::move(args), std::move(done),
                                   timer_now() + self->settings_.command_timeout});
             });
}

void ClusterImpl::on_state_change(std::function<void(bool)> listener) {
  std::lock_guard lock(callback_mutex_);
  if (!callbacks_detached_) listeners_.push_back(std::move(listener));
}

void ClusterImpl::on_error(std::function<void(ErrorKind)> listener) {
  std::lock_guard lock(callback_mutex_);
  if (!callbacks_detached_) error_listeners_.push_back(std::move(listener));
}

void ClusterImpl::on_round_trip(Client::RoundTripListener listener) {
  std::lock_guard lock(callback_mutex_);
  if (!callbacks_detached_) round_trip_listeners_.push_back(std::move(listener));
}

void ClusterImpl::detach_callbacks() {
  std::lock_guard lock(callback_mutex_);
  callbacks_detached_ = true;
  listeners_.clear();
  error_listeners_.clear();
  round_trip_listeners_.clear();
}

void ClusterImpl::report_error(ErrorKind kind) {
  std::lock_guard lock(callback_mutex_);
  for (std::size_t i = 0; i < error_listeners_.size() && !callbacks_detached_; ++i) {
    error_listeners_[i](kind);
  }
}

void ClusterImpl::report_round_trip(std::chrono::nanoseconds queued,
                                    std::chrono::nanoseconds answered) {
  std::lock_guard lock(callback_mutex_);
  for (std::size_t i = 0; i < round_trip_listeners_.size() && !callbacks_detached_; ++i) {
    round_trip_listeners_[i](queued, answered);
  }
}

void ClusterImpl::route(Command command) {
  if (stopping_ || !started_) {
    const std::error_code ec = stopping_ ? wg::errc::shutting_down : wg::errc::redis_down;
    if (!stopping_) report_error(ErrorKind::down);
    return command.done(ec, {});
  }
  Node node;
  if (auto key = routing_key(command.args)) {
    const std::uint16_t owner = owner_[key_slot(*key)];
    if (owner != kNoOwner) node = primaries_[owner];
  } else {
    node = any_primary();
  }
  if (!node) {
    if (!attempted_) {
      // Started a moment ago: wait for the first map (bounded like a first connection).
      if (held_.size() >= settings_.max_pending) {
        report_error(ErrorKind::overloaded);
        return command.done(wg::errc::redis_overloaded, {});
      }
      held_.push_back(std::move(command));
      return;
    }
    request_refresh();
    report_error(ErrorKind::down);
    return command.done(wg::errc::redis_down, {});
  }
  send(node, std::move(command), false);
}

void ClusterImpl::send(const Node& node, Command command, bool asking) {
  // The arguments stay with the command: a redirection sends them again.
  std::vector<std::string> args = command.args;
  std::weak_ptr<ClusterImpl> weak = weak_from_this();
  node->submit(
      std::move(args),
      Completion([weak, command = std::move(command)](std::error_code ec, Reply reply) mutable {
        auto self = weak.lock();
        if (!self) return command.done(wg::errc::shutting_down, {});
        auto& strand = self->strand_;
        asio::post(strand, [self = std::move(self), command = std::move(command), ec,
                            reply = std::move(reply)]() mutable {
          self->on_node_reply(std::move(command), ec, std::move(reply));
        });
      }),
      asking);
}

void ClusterImpl::on_node_reply(Command command, std::error_code ec, Reply reply) {
  if (!ec && reply.is_error() && !stopping_) {
    if (auto redirect = parse_redirect(reply.str)) {
      if (command.redirects < settings_.cluster->max_redirects) {
        ++command.redirects;
        Node target = node_at(redirect->host, redirect->port);
        if (redirect->kind == Redirect::Kind::moved) {
          // The slot has moved for good: note it now, and learn the rest of the new map.
          auto it = std::find(primaries_.begin(), primaries_.end(), target);
          if (it == primaries_.end()) {
            it = primaries_.insert(primaries_.end(), target);
            publish_primaries();
          }
          owner_[redirect->slot] = static_cast<std::uint16_t>(it - primaries_.begin());
          request_refresh();
        }
        return send(target, std::move(command), redirect->kind == Redirect::Kind::ask);
      }
      report_error(ErrorKind::moved);
    }
  }
  if (ec == wg::errc::redis_down) request_refresh();
  command.done(ec, std::move(reply));
}

ClusterImpl::Node ClusterImpl::node_at(const std::string& host, std::uint16_t port) {
  for (const Node& node : nodes_) {
    if (same_address(node->endpoint(), host, port)) return node;
  }
  Settings settings = settings_;
  settings.cluster.reset();
  settings.sentinel.reset();
  settings.endpoint.host = host;
  settings.endpoint.port = port;
  auto node = std::make_shared<ClientImpl>(strand_.get_inner_executor(), std::move(settings),
                                           random_, clock_, /*cluster_node=*/true);
  std::weak_ptr<ClusterImpl> weak = weak_from_this();
  node->on_state_change([weak](bool up) {
    auto self = weak.lock();
    if (!self) return;
    auto& strand = self->strand_;
    asio::post(strand, [self = std::move(self), up] {
      if (!up) self->request_refresh();  // failed over, perhaps: ask who serves its slots now
      self->update_state();
    });
  });
  node->on_error([weak](ErrorKind kind) {
    if (auto self = weak.lock()) self->report_error(kind);
  });
  node->on_round_trip([weak](std::chrono::nanoseconds queued, std::chrono::nanoseconds answered) {
    if (auto self = weak.lock()) self->report_round_trip(queued, answered);
  });
  node->start();
  nodes_.push_back(node);
  return node;
}

ClusterImpl::Node ClusterImpl::any_primary() {
  // Keyless commands (PING, PUBLISH, ...) go round the primaries that are up.
  for (std::size_t i = 0; i < primaries_.size(); ++i) {
    const Node& node = primaries_[(keyless_turn_ + i) % primaries_.size()];
    if (node->connected()) {
      keyless_turn_ = (keyless_turn_ + i + 1) % primaries_.size();
      return node;
    }
  }
  return primaries_.empty() ? Node() : primaries_.front();
}

void ClusterImpl::adopt(const std::vector<SlotRange>& ranges, const std::string& asked_host) {
  std::array<std::uint16_t, kClusterSlots> owner;
  owner.fill(kNoOwner);
  std::vector<Node> primaries;
  for (const SlotRange& range : ranges) {
    // A node that does not know its own address is announced without one.
    Node node = node_at(range.host.empty() ? asked_host : range.host, range.port);
    auto it = std::find(primaries.begin(), primaries.end(), node);
    if (it == primaries.end()) it = primaries.insert(primaries.end(), node);
    const auto index = static_cast<std::uint16_t>(it - primaries.begin());
    for (std::uint32_t slot = range.first; slot <= range.last; ++slot) owner[slot] = index;
  }
  // Seeds that are replicas and primaries that are gone: their commands in flight finish,
  // then their connections close.
  std::vector<Node> kept;
  for (Node& node : nodes_) {
    if (std::find(primaries.begin(), primaries.end(), node) != primaries.end()) {
      kept.push_back(std::move(node));
    } else {
      retire(std::move(node));
    }
  }
  nodes_ = std::move(kept);
  owner_ = owner;
  primaries_ = std::move(primaries);
  publish_primaries();
}

void ClusterImpl::publish_primaries() {
  std::lock_guard lock(snapshot_mutex_);
  primaries_snapshot_ = primaries_;
}

void ClusterImpl::retire(Node node) {
  node->detach_callbacks();
  auto timer = std::make_shared<asio::steady_timer>(strand_, 2 * settings_.command_timeout);
  timer->async_wait([timer, node = std::move(node)](boost::system::error_code) { node->stop(); });
}

void ClusterImpl::update_state() {
  const bool covered =
      std::none_of(owner_.begin(), owner_.end(), [](std::uint16_t o) { return o == kNoOwner; });
  const bool up = !stopping_ && covered && !primaries_.empty() &&
                  std::all_of(primaries_.begin(), primaries_.end(),
                              [](const Node& node) { return node->connected(); });
  up_.store(up, std::memory_order_release);
  if (up == reported_up_) return;
  reported_up_ = up;
  if (up) {
    log::info("redis_cluster_up", {{"primaries", primaries_.size()}});
  } else if (!stopping_) {
    log::warn("redis_cluster_down", {{"primaries", primaries_.size()}, {"covered", covered}});
  }
  std::lock_guard lock(callback_mutex_);
  for (std::size_t i = 0; i < listeners_.size() && !callbacks_detached_; ++i) listeners_[i](up);
}

void ClusterImpl::request_refresh() {
  refresh_due_ = true;
  wake_.cancel();
}

void ClusterImpl::release_held() {
  auto held = std::move(held_);
  held_.clear();
  const auto now = timer_now();
  for (Command& command : held) {
    if (command.deadline <= now) {
      report_error(ErrorKind::timeout);
      command.done(wg::errc::redis_timeout, {});
    } else {
      route(std::move(command));
    }
  }
}

awaitable<void> ClusterImpl::run() {
  auto self = shared_from_this();  // lives at least as long as the loop
  auto backoff = settings_.reconnect_min;
  while (!stopping_) {
    refresh_due_ = false;
    const bool learnt = co_await refresh();
    if (stopping_) break;
    if (!attempted_) {
      attempted_ = true;
      release_held();
    }
    update_state();
    // A map is asked for at most every reconnect_min, however often it is wanted; while it
    // is not whole (or cannot be had), again and again with backoff; otherwise now and then.
    const auto now = timer_now();
    const auto earliest = now + settings_.reconnect_min;
    SteadyTime next;
    if (learnt && up_.load()) {
      backoff = settings_.reconnect_min;
      next = now + settings_.cluster->refresh_interval;
    } else {
      next = now + backoff;
      backoff = std::min(backoff * 2, settings_.reconnect_max);
    }
    while (!stopping_) {
      const auto current = timer_now();
      if (current >= next || (refresh_due_ && current >= earliest)) break;
      wake_.expires_at(refresh_due_ ? earliest : next);
      co_await wake_.async_wait(use_tuple);
    }
  }
}

awaitable<bool> ClusterImpl::refresh() {
  // The primaries that are up know the map; the seeds are the fallback (and the start), each
  // connected only when its turn comes.
  std::vector<Node> asked;
  const std::size_t known = primaries_.size();
  const std::size_t seeds = settings_.cluster->seeds.size();
  for (std::size_t i = 0; i < known + seeds && !stopping_; ++i) {
    Node node;
    if (i < known) {
      if (i >= primaries_.size() || !primaries_[i]->connected()) continue;
      node = primaries_[i];
    } else {
      const std::string host = settings_.cluster->seeds[i - known].first;
      const std::uint16_t port = settings_.cluster->seeds[i - known].second;
      node = node_at(host, port);
    }
    if (std::find(asked.begin(), asked.end(), node) != asked.end()) continue;
    asked.push_back(node);
    std::optional<std::vector<SlotRange>> ranges = co_await ask_slots(node);
    if (ranges && !ranges->empty() && !stopping_) {
      const std::string host = node->endpoint().host;
      adopt(*ranges, host);
      co_return true;
    }
  }
  co_return false;
}

awaitable<std::optional<std::vector<SlotRange>>> ClusterImpl::ask_slots(Node node) {
  struct Asked {
    bool done = false;
    std::optional<Reply> reply;
  };
  auto asked = std::make_shared<Asked>();
  std::weak_ptr<ClusterImpl> weak = weak_from_this();
  std::vector<std::string> args{std::string("CLUSTER"), std::string("SLOTS")};
  node->submit(
      std::move(args), Completion([weak, asked](std::error_code ec, Reply reply) {
        auto self = weak.lock();
        if (!self) return;
        auto& strand = self->strand_;
        asio::post(strand, [self = std::move(self), asked, ec, reply = std::move(reply)]() mutable {
          asked->done = true;
          if (!ec) asked->reply = std::move(reply);
          self->wake_.cancel();
        });
      }));
  // The node answers, times out or is stopped: the wait always ends; the deadline is a
  // backstop for a node still making its first connection.
  const auto deadline = timer_now() + settings_.connect_timeout + 2 * settings_.command_timeout;
  while (!asked->done && !stopping_ && timer_now() < deadline) {
    wake_.expires_at(deadline);
    co_await wake_.async_wait(use_tuple);
  }
  if (!asked->reply) co_return std::nullopt;
  co_return parse_cluster_slots(*asked->reply);
}

}  // namespace wg::redis::detail
