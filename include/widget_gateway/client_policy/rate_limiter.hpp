#pragma once
// Per-client rate limit on requests that would go upstream ([access] per_ip_rate, per_ip_burst).
// Cache hits are never limited: the caller asks only on the way to a miss.
//
// A token bucket per client (refilled at `rate` tokens/s, holding at most `burst`), kept in the
// equivalent "theoretical arrival time" form (GCRA): one time point per client and exact integer
// arithmetic. A client whose bucket is full has a time point in the past, i.e. it looks exactly
// like a client never seen; that is what makes eviction safe.
//
// Memory is bounded: at most `max_tracked` clients are remembered. When a shard is full, its
// least recently seen client is forgotten; it is the one whose bucket has refilled the most, so
// forgetting it rarely changes a decision. An attacker rotating addresses therefore churns the
// table but cannot grow it (and gains nothing it did not already have by owning the addresses).
//
// IPv6 clients are bucketed by their /64: one subscriber gets at least a /64 and its hosts pick
// any of 2^64 addresses in it at will (privacy addresses), so a per-address bucket would neither
// limit anyone nor stay small. IPv4 clients (and IPv4-mapped IPv6) are bucketed per address.
//
// Thread-safe: clients are spread over `shards` mutexes by a keyed hash; nothing under a lock
// but a hash-map lookup and a little arithmetic. Time is passed in (wg::Clock::steady_now()).

#include <boost/asio/ip/address.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "widget_gateway/common/clock.hpp"

namespace wg::client_policy {

class RateLimiter {
 public:
  struct Decision {
    bool allowed = true;
    std::chrono::seconds retry_after{0};  // when refused: until one token is back, >= 1s
  };

  // rate_per_second <= 0 (or not finite) disables the limiter: every acquire() is allowed and
  // nothing is tracked. burst < 1 is taken as 1. `hash_seed` keys the shard and table hashes so
  // that clients cannot pick addresses that collide (pass a random value in production).
  RateLimiter(double rate_per_second, std::uint32_t burst, std::size_t max_tracked = 100000,
              std::size_t shards = 16, std::uint64_t hash_seed = 0x9e3779b97f4a7c15ULL);

  bool enabled() const { return enabled_; }

  // Takes one token from `client`'s bucket if there is one.
  Decision acquire(const boost::asio::ip::address& client, SteadyTime now);

  // Gives back the token acquire() took for `client`, when what it paid for did not happen. A
  // client forgotten since gets nothing back: a forgotten bucket is full anyway.
  void refund(const boost::asio::ip::address& client, SteadyTime now);

  // Clients currently remembered (for metrics and tests); takes every shard lock in turn.
  std::size_t tracked() const;

 private:
  using Key = std::array<std::uint8_t, 16>;
  struct KeyHash {
    std::uint64_t seed;
    std::size_t operator()(const Key& key) const;
  };
  struct Slot {
    SteadyTime tat;  // theoretical arrival time of the next request
    std::list<Key>::iterator lru;
  };
  struct Shard {
    explicit Shard(std::uint64_t seed) : slots(0, KeyHash{seed}) {}
    std::mutex mutex;
    std::unordered_map<Key, Slot, KeyHash> slots;
    std::list<Key> lru;  // most recently seen first
  };

  static Key key_of(const boost::asio::ip::address& client);

  bool enabled_ = false;
  SteadyTime::duration interval_{};   // time to earn one token
  SteadyTime::duration tolerance_{};  // (burst - 1) * interval_
  std::size_t per_shard_ = 1;
  KeyHash hash_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace wg::client_policy
