#include "support/redis_topology.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <thread>

namespace wg::test {

namespace {

using Steady = std::chrono::steady_clock;

// Runs redis-cli against 127.0.0.1:port; returns its output (--raw: one value per line),
// without the last newline.
std::string redis_cli(std::uint16_t port, const std::vector<std::string>& args) {
  std::string command = "redis-cli --raw -p " + std::to_string(port);
  for (const auto& a : args) {
    std::string quoted = "'";
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += " " + quoted + "'";
  }
  command += " 2>&1";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    ::pclose(pipe);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 30s) {
  const auto deadline = Steady::now() + limit;
  while (!done()) {
    if (Steady::now() >= deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

}  // namespace

RedisNode::RedisNode(std::vector<std::string> extra_args, bool sentinel) {
  // A port taken between free_port() and the bind: try another.
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_port();
    // A cluster node also listens on port + 10000 (its bus), which must stay below 65536.
    const bool cluster =
        std::find(extra_args.begin(), extra_args.end(), "--cluster-enabled") != extra_args.end();
    for (int pick = 0; cluster && port_ > 55535 && pick < 100; ++pick) port_ = free_port();
    std::vector<std::string> argv{"redis-server"};
    if (sentinel) {
      // A sentinel rewrites its config file: it needs one of its own.
      argv.push_back(dir_.write("sentinel-" + std::to_string(port_) + ".conf", ""));
      argv.push_back("--sentinel");
    }
    for (const std::string& a : std::vector<std::string>{
             "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "", "--appendonly",
             "no", "--daemonize", "no", "--dir", dir_.path()}) {
      argv.push_back(a);
    }
    for (auto& a : extra_args) argv.push_back(a);
    process_ = std::make_unique<ChildProcess>(argv);
    const bool ready = poll_until(
        [&] {
          const std::string output = process_->output();
          const bool announced = output.find("Ready to accept connections") != std::string::npos ||
                                 output.find("Sentinel ID is") != std::string::npos;
          return !process_->running() || (announced && wait_for_port(port_, 1s));
        },
        10s);
    if (ready && process_->running()) return;
    process_->stop(9, 5s);
  }
  throw std::runtime_error("redis-server did not start: " + process_->output());
}

std::string RedisNode::command(const std::vector<std::string>& args) const {
  return redis_cli(port_, args);
}

std::size_t RedisNode::clients() const {
  const std::string list = command({"CLIENT", "LIST"});
  std::size_t count = 0;
  std::size_t start = 0;
  while (start < list.size()) {
    auto end = list.find('\n', start);
    if (end == std::string::npos) end = list.size();
    const std::string line = " " + list.substr(start, end - start) + " ";
    start = end + 1;
    auto field = [&line](const std::string& name) {
      const auto at = line.find(" " + name + "=");
      if (at == std::string::npos) return std::string();
      const auto from = at + name.size() + 2;
      return line.substr(from, line.find(' ', from) - from);
    };
    if (field("id").empty()) continue;
    const std::string flags = field("flags");
    const bool replication =
        flags.find('S') != std::string::npos || flags.find('M') != std::string::npos;
    if (field("name").rfind("sentinel-", 0) == 0 || replication || field("cmd") == "client|list") {
      continue;
    }
    ++count;
  }
  return count;
}

RedisCluster::RedisCluster(int primaries, int replicas) {
  std::vector<std::string> create{"--cluster", "create"};
  for (int i = 0; i < primaries * (1 + replicas); ++i) {
    nodes_.push_back(std::make_unique<RedisNode>(
        std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                 "--cluster-node-timeout", "2000"}));
    create.push_back(nodes_.back()->address());
  }
  create.push_back("--cluster-replicas");
  create.push_back(std::to_string(replicas));
  create.push_back("--cluster-yes");
  const std::string created = redis_cli(nodes_.front()->port(), create);
  const bool ok = poll_until([&] {
    for (auto& node : nodes_) {
      if (node->command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) {
        return false;
      }
    }
    return true;
  });
  if (!ok) throw std::runtime_error("the cluster did not form: " + created);
}

std::vector<std::string> RedisCluster::seeds() const {
  std::vector<std::string> out;
  for (const auto& node : nodes_) out.push_back(node->address());
  return out;
}

RedisNode& RedisCluster::node_for(const std::string& key) {
  // Only the primary that serves the key's slot answers without a redirection (replicas
  // redirect too).
  for (auto& node : nodes_) {
    if (!node->process().running()) continue;
    const std::string answer = node->command({"EXISTS", key});
    if (answer.find("MOVED") == std::string::npos && answer.find("ASK") == std::string::npos &&
        answer.find("CLUSTERDOWN") == std::string::npos && (answer == "0" || answer == "1")) {
      return *node;
    }
  }
  throw std::runtime_error("no node serves the slot of " + key);
}

std::string RedisCluster::command_for(const std::string& key,
                                      const std::vector<std::string>& args) {
  return node_for(key).command(args);
}

int RedisCluster::slot_of(const std::string& key) {
  return std::stoi(nodes_.front()->command({"CLUSTER", "KEYSLOT", key}));
}

void RedisCluster::begin_migration(int slot, RedisNode& from, RedisNode& to) {
  const std::string from_id = from.command({"CLUSTER", "MYID"});
  const std::string to_id = to.command({"CLUSTER", "MYID"});
  const std::string s = std::to_string(slot);
  if (to.command({"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}) != "OK" ||
      from.command({"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}) != "OK") {
    throw std::runtime_error("cannot start migrating slot " + s);
  }
}

void RedisCluster::migrate_key(const std::string& key, RedisNode& from, RedisNode& to) {
  const std::string answer =
      from.command({"MIGRATE", "127.0.0.1", std::to_string(to.port()), key, "0", "5000"});
  if (answer != "OK") throw std::runtime_error("MIGRATE " + key + ": " + answer);
}

void RedisCluster::finish_migration(int slot, RedisNode& to) {
  const std::string to_id = to.command({"CLUSTER", "MYID"});
  const std::string s = std::to_string(slot);
  // The new owner first, then the rest (as redis-cli does); replicas learn it by gossip.
  to.command({"CLUSTER", "SETSLOT", s, "NODE", to_id});
  for (auto& node : nodes_) {
    if (node.get() != &to && node->process().running()) {
      node->command({"CLUSTER", "SETSLOT", s, "NODE", to_id});
    }
  }
}

bool RedisCluster::wait_served_elsewhere(const std::string& key, std::uint16_t not_port) {
  return poll_until([&] {
    for (auto& node : nodes_) {
      if (node->process().running() &&
          node->command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) {
        return false;
      }
    }
    try {
      return node_for(key).port() != not_port;
    } catch (const std::exception&) {
      return false;
    }
  });
}

RedisSentinels::RedisSentinels(std::string name, OldPrimary old_primary) : name_(std::move(name)) {
  std::vector<std::string> first;
  if (old_primary == OldPrimary::stays_writable) {
    first = {"--rename-command", "REPLICAOF", "", "--rename-command", "SLAVEOF", ""};
  }
  data_.push_back(std::make_unique<RedisNode>(first));
  data_.push_back(std::make_unique<RedisNode>(
      std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(data_[0]->port())}));
  for (int i = 0; i < 3; ++i) {
    sentinels_.push_back(std::make_unique<RedisNode>(std::vector<std::string>{}, true));
    auto& s = *sentinels_.back();
    s.command({"SENTINEL", "MONITOR", name_, "127.0.0.1", std::to_string(data_[0]->port()), "2"});
    s.command({"SENTINEL", "SET", name_, "down-after-milliseconds", "1000"});
    s.command({"SENTINEL", "SET", name_, "failover-timeout", "5000"});
  }
  // Ready when the replica is in sync and every sentinel knows the replica and the others.
  const bool ok = poll_until([&] {
    if (data_[1]->command({"INFO", "replication"}).find("master_link_status:up") ==
        std::string::npos) {
      return false;
    }
    for (auto& s : sentinels_) {
      const std::string replicas = s->command({"SENTINEL", "REPLICAS", name_});
      const std::string others = s->command({"SENTINEL", "SENTINELS", name_});
      if (replicas.find(std::to_string(data_[1]->port())) == std::string::npos) return false;
      int seen = 0;
      for (auto& o : sentinels_) {
        if (o != s && others.find(std::to_string(o->port())) != std::string::npos) ++seen;
      }
      if (seen < 2) return false;
    }
    return true;
  });
  if (!ok) throw std::runtime_error("the sentinels did not settle");
}

std::vector<std::string> RedisSentinels::sentinels() const {
  std::vector<std::string> out;
  for (const auto& s : sentinels_) out.push_back(s->address());
  return out;
}

std::uint16_t RedisSentinels::primary_port() {
  const std::string answer =
      sentinels_.front()->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", name_});
  const auto newline = answer.find('\n');
  if (newline == std::string::npos) throw std::runtime_error("no primary: " + answer);
  return static_cast<std::uint16_t>(std::stoi(answer.substr(newline + 1)));
}

RedisNode& RedisSentinels::node_on(std::uint16_t port) {
  for (auto& node : data_) {
    if (node->port() == port) return *node;
  }
  throw std::runtime_error("no data node on port " + std::to_string(port));
}

std::uint16_t RedisSentinels::failover() {
  const std::uint16_t before = primary_port();
  const std::uint16_t after = switch_primary();
  if (!poll_until([&] { return node_on(before).command({"ROLE"}).rfind("slave", 0) == 0; })) {
    throw std::runtime_error("the old primary did not become a replica");
  }
  return after;
}

std::uint16_t RedisSentinels::switch_primary() {
  const std::uint16_t before = primary_port();
  // What was written so far reaches the replica first (bounded: 5 s). SENTINEL FAILOVER does
  // not wait for it, and a replica behind would come up without the last writes: a test of
  // following a failover, not of losing writes (tests/integration/quota_durability_test.cpp).
  node_on(before).command({"WAIT", "1", "5000"});
  // The sentinel asked runs the failover itself (no election), so it names the new primary
  // first.
  const std::string answer = sentinels_.front()->command({"SENTINEL", "FAILOVER", name_});
  if (answer != "OK") throw std::runtime_error("SENTINEL FAILOVER: " + answer);
  std::uint16_t after = before;
  const bool ok = poll_until([&] {
    after = primary_port();
    return after != before && node_on(after).command({"ROLE"}).rfind("master", 0) == 0 &&
           node_on(after).command({"SET", "wg-test:failover-probe", "1"}) == "OK";
  });
  if (!ok) throw std::runtime_error("the failover did not complete");
  return after;
}

std::string RedisSentinels::primary_command(const std::vector<std::string>& args) {
  return node_on(primary_port()).command(args);
}

}  // namespace wg::test
