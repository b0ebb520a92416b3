#pragma once
// Redis Cluster's routing arithmetic, pure and thread-safe: the slot of a key (CRC16 of the
// key, or of its hash tag, modulo 16384), the argument a command routes by, MOVED/ASK
// redirections, and the slot map that CLUSTER SLOTS describes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis::detail {

inline constexpr std::uint16_t kClusterSlots = 16384;

// As CLUSTER KEYSLOT: the part between the first '{' and the next '}' is hashed when it is not
// empty, else the whole key.
std::uint16_t key_slot(std::string_view key);

// The key a command is routed by: the first key of an EVAL/EVALSHA (none when numkeys is 0),
// nothing for commands without keys (PING, INFO, PUBLISH, SUBSCRIBE...), otherwise the first
// argument after the command name.
std::optional<std::string_view> routing_key(const std::vector<std::string>& args);

struct Redirect {
  enum class Kind { moved, ask };
  Kind kind = Kind::moved;
  std::uint16_t slot = 0;
  std::string host;  // as the cluster announces it (an address, or a name)
  std::uint16_t port = 0;
};
// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" (an error reply's text); nullopt
// for any other error.
std::optional<Redirect> parse_redirect(std::string_view error);

struct SlotRange {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  std::string host;  // the range's primary
  std::uint16_t port = 0;
};
// The primaries of a CLUSTER SLOTS reply; nullopt when it is not one. An empty host (a node
// that does not know its own address) is left for the caller to replace with the address it
// asked.
std::optional<std::vector<SlotRange>> parse_cluster_slots(const Reply& reply);

}  // namespace wg::redis::detail
