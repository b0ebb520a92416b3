#pragma once
// The two cache tiers as one: the in-process L1 in front of the shared Redis L2. An L1 hit
// costs no Redis round trip; an L2 hit fills L1; a store writes both. L1 never serves an entry
// past its stale_until, which is when Redis itself lets it expire. Every entry handed out or
// stored is held to the current TTL policy (cache::TtlPolicy::held_to): a reload that lowers
// cache.max_ttl or moves cache.refresh_at applies to what is cached, from its next read.
//
// Reads from Redis are shared and bounded per worker: concurrent misses of one key wait for
// the one read already under way (one command, one decoded copy), and at most
// kMaxReadsInFlight reads are in flight at once, the others waiting their turn. A burst of
// misses, right after a restart say, thus holds at most kMaxReadsInFlight replies per worker
// instead of one per request.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "in_flight_limit.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/cache/l1_cache.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::metrics {
class GatewayMetrics;
}

namespace wg::serving {

enum class Tier { none, l1, l2 };

struct Found {
  std::shared_ptr<const cache::Entry> entry;  // null: in neither tier (or past stale_until)
  Tier tier = Tier::none;
  bool shared_unavailable = false;  // Redis did not answer the lookup (not a miss)
};

// The L1 copies of the other io workers of this process: asked on a miss only while Redis
// cannot be (each worker keeps its own copies, and Redis is how they normally fill).
class SiblingCaches {
 public:
  virtual ~SiblingCaches() = default;
  // A copy of its own (no memory shared with the owner) of the first other worker's entry for
  // `key`; null when none holds one. Completes on the caller's executor.
  virtual boost::asio::awaitable<std::shared_ptr<const cache::Entry>> find_copy(
      std::string key, unsigned asking_worker) = 0;
};

// Whether a Redis read may be answered by one of this worker's reads of the key already under
// way. Not when the caller needs what Redis holds now, e.g. a copy the claim just reported:
// a read sent before the claim may predate it.
enum class ReadSharing { join, fresh };

class CacheTier {
 public:
  // Reads in flight per worker, and reads waiting for one of those places. Past the waiting
  // bound, or after `read_wait` in line, a read is answered as if Redis had not (a
  // shared_unavailable miss). wg_redis_reads_total{read} counts reads sent, joined and shed.
  static constexpr std::size_t kMaxReadsInFlight = 32;
  static constexpr std::size_t kMaxReadsWaiting = 4096;

  CacheTier(cache::L1Cache& l1, cache::RedisStore& l2, Clock& clock,
            metrics::GatewayMetrics* metrics, std::chrono::milliseconds read_wait)
      : l1_(l1),
        l2_(l2),
        clock_(clock),
        metrics_(metrics),
        read_wait_(read_wait),
        read_slots_(kMaxReadsInFlight, kMaxReadsWaiting) {}

  // L1 only: never waits. Null when absent or past stale_until. `annex` (optional): what is
  // kept beside the entry found (L1Cache::get).
  std::shared_ptr<const cache::Entry> find_local(const std::string& key,
                                                 const cache::L1Annex** annex = nullptr);
  // L1, then L2 (filling L1).
  boost::asio::awaitable<Found> find(const std::string& key);
  // `key` as find() does; when L1 misses it and `also` (a key of the same widget) is not in L1
  // either, `also` comes from Redis in the same command and fills L1 too. The second value is
  // `also`'s (tier l1 when it was in L1 already).
  boost::asio::awaitable<std::pair<Found, Found>> find_pair(const std::string& key,
                                                            const std::string& also);
  // L2 only, e.g. to pick up what another instance stored while this one waited for it.
  boost::asio::awaitable<Found> find_shared(const std::string& key,
                                            ReadSharing sharing = ReadSharing::join);
  // Writes L1, then L2. Returns whether L2 took it.
  boost::asio::awaitable<bool> store(const std::string& key,
                                     std::shared_ptr<const cache::Entry> entry);
  // The same for an entry fetched after `placement` was taken (RedisStore::place): stored in
  // Redis where it was placed, and in L1 only if no purge of its widget was seen since (after a
  // purge: nowhere, false).
  // With `done` (may be null), the fetch lock is marked done in the same round trip (even when
  // the copy goes to Redis only).
  boost::asio::awaitable<bool> store(const std::string& key,
                                     std::shared_ptr<const cache::Entry> entry,
                                     const cache::RedisStore::Placement& placement,
                                     const cache::LockDone* done = nullptr);
  // L1 only, for answers that are cheap to rebuild (derived pages, local answers) and copies
  // from sibling workers. Returns the entry as stored (held to the policy).
  std::shared_ptr<const cache::Entry> store_local(const std::string& key,
                                                  std::shared_ptr<const cache::Entry> entry);

  // The TTL policy entries are held to from now on (the service's, at start and on reloads).
  // When it changes, L1 copies stored before `now` are checked again as they are read; a hit
  // on any later copy costs one comparison more.
  void hold_to(const cache::TtlPolicy& policy, WallTime now);

  cache::L1Cache& l1() { return l1_; }
  cache::RedisStore& shared() { return l2_; }
  // Reads sent to Redis and not answered yet, and reads waiting to be sent.
  std::size_t reads_in_flight() const { return read_slots_.in_flight(); }
  std::size_t reads_waiting() const { return read_slots_.waiting(); }

 private:
  struct Read;  // one read under way, and what it found
  // Registers a read of `keys` (joined by later reads of any of them), sends it when a place
  // is free, and wakes whoever joined it.
  boost::asio::awaitable<std::vector<Found>> read(std::vector<std::string> keys);
  // What `read`, already under way, finds for `key`.
  boost::asio::awaitable<Found> joined(std::shared_ptr<Read> read, const std::string& key);
  bool reading(const std::string& key) const { return reads_.contains(key); }
  std::shared_ptr<Read> under_way(const std::string& key) const {
    auto found = reads_.find(key);
    return found == reads_.end() ? nullptr : found->second;
  }

  // A Redis lookup's result as found (metrics counted, L1 filled).
  Found take_shared(const std::string& key, cache::Lookup& lookup);
  // L1's copy, held to the policy if it may predate it (a cut copy replaces it in L1).
  std::shared_ptr<const cache::Entry> from_l1(const std::string& key,
                                              const cache::L1Annex** annex = nullptr);
  // `entry`, or a copy of it cut to the policy.
  std::shared_ptr<const cache::Entry> held(std::shared_ptr<const cache::Entry> entry) const;
  // The same, and read as stale from a soft purge of `key`'s widget that it predates
  // (docs/freshness.md): every copy entering L1 passes here.
  std::shared_ptr<const cache::Entry> held(const std::string& key,
                                           std::shared_ptr<const cache::Entry> entry) const;

  cache::L1Cache& l1_;
  cache::RedisStore& l2_;
  Clock& clock_;
  metrics::GatewayMetrics* metrics_;
  std::optional<cache::TtlPolicy> policy_;   // none: entries are served as stored
  WallTime policy_since_ = WallTime::min();  // L1 copies stored before it may predate policy_
  std::chrono::milliseconds read_wait_;
  InFlightLimit read_slots_;
  // The newest read under way of each key. Joiners wait on it; their number is bounded by the
  // worker's requests in flight (connections and streams), each of which waits for one read.
  std::unordered_map<std::string, std::shared_ptr<Read>> reads_;
};

}  // namespace wg::serving
