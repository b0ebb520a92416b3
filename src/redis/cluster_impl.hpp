#pragma once
// A Client in Redis Cluster mode: one ClientImpl per primary, the slot map learnt with
// CLUSTER SLOTS, each command sent to its slot's primary, MOVED and ASK followed.
//
// Threads: the map, the nodes and the held commands live on this object's strand; node
// replies are posted back to it. connected() is an atomic, healthy() reads a snapshot of the
// primaries under a mutex (it is asked by readiness checks, not on the hit path).

#include <array>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "redis/backend.hpp"
#include "redis/client_impl.hpp"
#include "redis/cluster_slots.hpp"

namespace wg::redis::detail {

class ClusterImpl final : public Backend, public std::enable_shared_from_this<ClusterImpl> {
 public:
  ClusterImpl(boost::asio::any_io_executor ex, Settings settings, RandomSource& random,
              Clock& clock);
  ~ClusterImpl() override;

  void start() override;
  void stop() override;
  bool connected() const noexcept override { return up_.load(std::memory_order_acquire); }
  bool healthy() const noexcept override;
  void submit(std::vector<std::string> args, Completion done) override;
  void on_state_change(std::function<void(bool)> listener) override;
  void on_error(std::function<void(ErrorKind)> listener) override;
  void on_round_trip(Client::RoundTripListener listener) override;
  void detach_callbacks() override;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using Node = std::shared_ptr<ClientImpl>;
  static constexpr std::uint16_t kNoOwner = 0xffff;

  struct Command {
    std::vector<std::string> args;
    Completion done;
    SteadyTime deadline;  // while held for the first map
    int redirects = 0;
  };

  // Strand only, all of them.
  void route(Command command);
  void send(const Node& node, Command command, bool asking);
  void on_node_reply(Command command, std::error_code ec, Reply reply);
  Node node_at(const std::string& host, std::uint16_t port);
  Node any_primary();
  void adopt(const std::vector<SlotRange>& ranges, const std::string& asked_host);
  void retire(Node node);
  void publish_primaries();  // for healthy()
  void update_state();
  void report_error(ErrorKind kind);
  void report_round_trip(std::chrono::nanoseconds queued, std::chrono::nanoseconds answered);
  void request_refresh();
  void release_held();
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<bool> refresh();
  boost::asio::awaitable<std::optional<std::vector<SlotRange>>> ask_slots(Node node);

  Strand strand_;
  Settings settings_;
  RandomSource& random_;
  Clock& clock_;             // handed to the nodes, for their health hold
  std::vector<Node> nodes_;  // every node a command may go to: primaries, ASK targets, seeds
  std::array<std::uint16_t, kClusterSlots> owner_{};  // index into primaries_, kNoOwner
  std::vector<Node> primaries_;                       // as the last map named them
  std::vector<Command> held_;                         // until the first map attempt is over
  std::size_t keyless_turn_ = 0;
  bool started_ = false;
  bool stopping_ = false;
  bool attempted_ = false;
  bool refresh_due_ = false;
  boost::asio::steady_timer wake_;
  std::atomic<bool> up_{false};
  bool reported_up_ = false;

  mutable std::mutex snapshot_mutex_;
  std::vector<Node> primaries_snapshot_;  // for healthy(), any thread

  std::recursive_mutex callback_mutex_;
  bool callbacks_detached_ = false;
  std::vector<std::function<void(bool)>> listeners_;
  std::vector<std::function<void(ErrorKind)>> error_listeners_;
  std::vector<Client::RoundTripListener> round_trip_listeners_;
};

}  // namespace wg::redis::detail
