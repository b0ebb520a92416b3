#pragma once
// Real Redis topologies on loopback for tests: a Redis Cluster of primaries made with
// `redis-cli --cluster create`, and a primary with a replica watched by sentinels
// (`redis-server --sentinel`). Every process stops with its owner, even on failure.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace wg::test {

// A redis-server on a free loopback port with extra arguments, for topologies.
class RedisNode {
 public:
  explicit RedisNode(std::vector<std::string> extra_args, bool sentinel = false);
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // One command over a short blocking connection, as RedisServer::command.
  std::string command(const std::vector<std::string>& args) const;
  // Connections of the clients under test: every client but the sentinels, replication links
  // and the connection asking.
  std::size_t clients() const;
  ChildProcess& process() { return *process_; }

 private:
  std::uint16_t port_ = 0;
  TempDir dir_;
  std::unique_ptr<ChildProcess> process_;
};

// `primaries` cluster-enabled nodes with `replicas` replicas each, every slot assigned; waits
// for cluster_state:ok. A primary that stops is replaced by its replica after 2 s.
class RedisCluster {
 public:
  explicit RedisCluster(int primaries = 3, int replicas = 0);
  std::vector<std::string> seeds() const;  // "127.0.0.1:PORT" of every node
  RedisNode& node(std::size_t i) { return *nodes_[i]; }
  std::size_t size() const { return nodes_.size(); }
  // The primary serving `key`'s slot now (the only node that answers it without MOVED).
  RedisNode& node_for(const std::string& key);
  // Runs `args` on the node serving `key`.
  std::string command_for(const std::string& key, const std::vector<std::string>& args);
  // CLUSTER KEYSLOT.
  int slot_of(const std::string& key);
  // Slot migration, as `redis-cli --cluster reshard` does it, one step at a time: mark the
  // slot importing on `to` and migrating on `from`; move one key; then give the slot to `to`
  // on every node.
  void begin_migration(int slot, RedisNode& from, RedisNode& to);
  void migrate_key(const std::string& key, RedisNode& from, RedisNode& to);
  void finish_migration(int slot, RedisNode& to);
  // Waits until every running node says cluster_state:ok and `key`'s slot is served by a
  // primary other than `not_port`.
  bool wait_served_elsewhere(const std::string& key, std::uint16_t not_port);

 private:
  std::vector<std::unique_ptr<RedisNode>> nodes_;
};

// A primary, one replica, and three sentinels monitoring them as `name` (quorum 2, a down
// primary noticed after 1 s).
class RedisSentinels {
 public:
  // What becomes of the first primary after a failover: a replica of the new one, as Redis
  // makes it, or it refuses to become one (REPLICAOF and SLAVEOF renamed away) and stays a
  // writable primary, as a manual failover leaves the old primary for seconds: then only
  // clients that follow the sentinels' announcement leave it.
  enum class OldPrimary { demoted, stays_writable };

  explicit RedisSentinels(std::string name = "wgprimary",
                          OldPrimary old_primary = OldPrimary::demoted);
  const std::string& name() const { return name_; }
  std::vector<std::string> sentinels() const;  // "127.0.0.1:PORT" of each sentinel
  // The primary's port as the sentinels name it now.
  std::uint16_t primary_port();
  // What was written reaches the replica (WAIT, at most 5 s), then SENTINEL FAILOVER; then
  // waits until the sentinels name the other node, it accepts writes and the old primary has
  // become its replica. Returns the new primary's port.
  std::uint16_t failover();
  // The same without waiting for the old primary: WAIT, SENTINEL FAILOVER, then only until the
  // sentinels name the other node and it accepts writes (the old primary may still be one).
  // Returns the new primary's port.
  std::uint16_t switch_primary();
  // A command on the node currently named primary.
  std::string primary_command(const std::vector<std::string>& args);
  RedisNode& node_on(std::uint16_t port);

 private:
  std::string name_;
  std::vector<std::unique_ptr<RedisNode>> data_;  // [0] starts as primary, [1] as replica
  std::vector<std::unique_ptr<RedisNode>> sentinels_;
};

}  // namespace wg::test
