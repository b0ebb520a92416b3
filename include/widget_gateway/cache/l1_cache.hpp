#pragma once
// The in-process L1 in front of Redis (L2): a byte-bounded, sharded map from cache key to a
// shared, immutable Entry. It only stores; the caller decides freshness (it compares
// fresh_until / stale_until with its clock), so L1 never serves past what L2 would as long as
// the caller applies the same rules to both tiers.
//
// Eviction is S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction",
// SOSP 2023) per shard, chosen over LRU for two reasons:
// - A hit only bumps a 2-bit frequency counter (an atomic), so lookups take the shard lock in
//   shared mode and never reorder a list: io threads reading the same hot keys do not
//   serialize on one another.
// - New keys enter a small FIFO (10% of the shard's bytes); only keys hit while there, or
//   re-inserted soon after eviction (remembered by a ghost FIFO of key hashes), reach the main
//   FIFO. A scan of one-hit keys therefore cycles through the small FIFO and cannot flush hot
//   entries out of the main one.
//
// Memory: every stored entry is charged charged_bytes(key, entry) and the ghost queue
// kGhostChargedBytes per remembered hash; each shard keeps the sum within max_bytes / shards.
// An entry whose charge exceeds a shard's budget is not stored.
//
// Threads: with Access::shared every member is thread-safe (shard locks). With
// Access::owner_thread one thread (an io worker) makes every call and the cache takes no lock
// and does no atomic read-modify-write: a hit touches only memory no other thread writes.
// bytes(), entries(), max_bytes() and stats() stay safe to read from any thread either way.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "widget_gateway/cache/entry.hpp"

namespace wg::cache {

// Fixed cost of one stored entry beyond its strings: the queue node (with its key string
// object, pointers and counters), the hash-map node and its bucket slot, the prefix-index share,
// the Entry object with its shared_ptr control block (one block or two), and malloc's rounding
// on each of the entry's heap blocks. The unit test measures the heap the cache really holds
// with a counting allocator (malloc_usable_size) over thousands of mixed entries and requires
// it to stay below the charge; there the charge is about 14% above the real heap.
inline constexpr std::size_t kEntryOverheadBytes = 512;
// Per content-coding variant: the pair of string objects in the vector plus allocator rounding
// of their two heap blocks.
inline constexpr std::size_t kVariantOverheadBytes = 112;
// Per hash remembered by the ghost FIFO: the deque slot plus a hash-set node and bucket.
inline constexpr std::size_t kGhostChargedBytes = 64;

// What an entry costs in memory while stored: key (twice: the stored key and, at most, its
// widget prefix in the purge index) + body + etag + every variant (coding and encoded bytes, by
// capacity) + its body file's bytes (memory outside the heap and outside RSS, but memory) +
// kEntryOverheadBytes + kVariantOverheadBytes per variant.
std::size_t charged_bytes(std::string_view key, const Entry& entry);

// What the caller of an owner-thread cache keeps beside a stored entry (the frontend keeps its
// answer heads there): dropped with the entry, and charged to its key from when it is attached.
class L1Annex {
 public:
  virtual ~L1Annex() = default;
  virtual std::size_t bytes() const = 0;
};

class L1Cache {
 public:
  enum class Access { shared, owner_thread };

  // max_bytes 0 = disabled (every lookup misses, inserts are dropped). `shards` (at least 1)
  // bounds contention; each shard gets max_bytes / shards, so an entry larger than that share
  // is never stored.
  explicit L1Cache(std::size_t max_bytes, std::size_t shards = 16, Access access = Access::shared);
  ~L1Cache();
  L1Cache(const L1Cache&) = delete;
  L1Cache& operator=(const L1Cache&) = delete;

  // The stored entry or nullptr. Takes the shard lock in shared mode and allocates nothing;
  // the key is hashed once.
  std::shared_ptr<const Entry> get(std::string_view key) const;
  // The same, and the annex kept beside the entry (null when none, and always with
  // Access::shared). The pointer is valid until the owner thread next changes the cache.
  std::shared_ptr<const Entry> get(std::string_view key, const L1Annex** annex) const;

  // Access::owner_thread: keeps `annex` beside `key`'s entry, in place of the one there, while
  // the key holds `entry`; its bytes() count in the bound from now on (which may evict). Dropped
  // otherwise, and with Access::shared.
  void attach(std::string_view key, const Entry* entry, std::unique_ptr<const L1Annex> annex);

  // Stores or replaces `key`, then evicts until the shard is within its budget. A null entry
  // or one too large for a shard erases `key` instead, so an older version is never left
  // behind.
  void put(std::string key, std::shared_ptr<const Entry> entry);

  void erase(std::string_view key);

  // Erases every key starting with `prefix`. A widget prefix as api::widget_key_prefix builds
  // it ("wg:{<escaped id>}:") is served from a per-shard index in O(entries of that widget);
  // any other prefix scans every entry (O(n); only purge-all like operations need it).
  void erase_prefix(std::string_view prefix);
  // Erases the keys starting with `prefix` (which starts with a widget prefix: served from the
  // widget's index) for which `erase` says so.
  void erase_prefix_if(std::string_view prefix,
                       const std::function<bool(std::string_view key, const Entry& entry)>& erase);

  void clear();

  std::size_t bytes() const;    // charged bytes of stored entries and ghost hashes
  std::size_t entries() const;  // stored entries
  std::size_t max_bytes() const { return max_bytes_.load(std::memory_order_relaxed); }

  // Changes the bound (SIGHUP); shrinking evicts at once. 0 disables and empties the cache.
  void set_max_bytes(std::size_t max_bytes);

  struct Stats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t evictions = 0;  // entries dropped to make room (not erases or replacements)
    std::uint64_t inserts = 0;    // puts that stored an entry (new or replacing)
  };
  Stats stats() const;

 private:
  struct Shard;
  Shard& shard_for(std::size_t hash) const;

  std::atomic<std::size_t> max_bytes_;
  bool locking_;  // Access::shared
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace wg::cache
