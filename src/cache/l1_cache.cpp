#include "widget_gateway/cache/l1_cache.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "widget_gateway/common/key_space.hpp"

namespace wg::cache {

namespace {

// The small FIFO's share of a shard's bytes (the paper's 10%).
constexpr std::size_t kSmallShareDivisor = 10;
// The ghost FIFO remembers at most as many hashes as there are entries, plus a few so that a
// nearly empty shard still recognizes a quick re-insert.
constexpr std::size_t kGhostSlack = 8;
constexpr std::uint8_t kMaxFreq = 3;

std::size_t hash_key(std::string_view key) {
  return std::hash<std::string_view>{}(key);
}

// "wg:{<id>}:" when `key` has that form, empty otherwise. Escaped ids never hold '}', so the
// first '}' closes the hash tag.
std::string_view widget_prefix_of(std::string_view key) {
  if (!key.starts_with(kLogicalWidgetHead)) return {};
  const auto close = key.find('}', kLogicalWidgetHead.size());
  if (close == std::string_view::npos || close + 1 >= key.size() || key[close + 1] != ':') {
    return {};
  }
  return key.substr(0, close + 2);
}

}  // namespace

std::size_t charged_bytes(std::string_view key, const Entry& entry) {
  std::size_t n = kEntryOverheadBytes + 2 * key.size() + entry.body.capacity() +
                  entry.etag.capacity() +
                  entry.variants.capacity() * sizeof(std::pair<std::string, std::string>);
  for (const auto& [coding, bytes] : entry.variants) {
    n += kVariantOverheadBytes + coding.capacity() + bytes.capacity();
  }
  if (entry.body_file) n += entry.body_file->size();
  if (entry.element_spans) {
    n += entry.element_spans->capacity() * sizeof(entry.element_spans->front());
  }
  return n;
}

namespace {

// The shard lock, taken only when the cache is shared between threads.
template <typename Lock>
std::optional<Lock> lock_if(bool locking, std::shared_mutex& mutex) {
  if (!locking) return std::nullopt;
  return std::optional<Lock>(std::in_place, mutex);
}

// A statistic counter: an atomic add when threads share the cache, a plain load and store when
// only the owner thread writes it.
void bump(std::atomic<std::uint64_t>& counter, bool shared) {
  if (shared) {
    counter.fetch_add(1, std::memory_order_relaxed);
  } else {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

}  // namespace

// One independently locked part of the cache. Lookups hold `mutex` shared and touch only the
// atomic `freq` of a node; everything else changes under the exclusive lock.
struct alignas(64) L1Cache::Shard {
  struct Group;

  struct Node {
    Node(std::string k, std::size_t h, std::shared_ptr<const Entry> e, std::size_t c, bool main)
        : key(std::move(k)), hash(h), entry(std::move(e)), charge(c), in_main(main) {}

    std::string key;
    std::size_t hash;
    std::shared_ptr<const Entry> entry;
    std::size_t charge;  // the entry's, and its annex's
    std::unique_ptr<const L1Annex> annex;
    std::atomic<std::uint8_t> freq{0};  // hits since insertion or last demotion, capped at 3
    bool in_main;
    // Intrusive list of the entries of one widget, for erase_prefix.
    Group* group = nullptr;
    Node* group_prev = nullptr;
    Node* group_next = nullptr;
  };
  using Queue = std::list<Node>;  // front = newest, back = next to evict

  struct Group {
    Node* head = nullptr;
  };

  // Map keys are views into the node's own key (list nodes never move) with the hash cached,
  // so a lookup by string_view neither allocates nor hashes twice.
  struct KeyRef {
    std::string_view key;
    std::size_t hash;
  };
  struct KeyRefHash {
    std::size_t operator()(const KeyRef& k) const noexcept { return k.hash; }
  };
  struct KeyRefEq {
    bool operator()(const KeyRef& a, const KeyRef& b) const noexcept {
      return a.hash == b.hash && a.key == b.key;
    }
  };
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return hash_key(s); }
  };

  mutable std::shared_mutex mutex;
  std::size_t budget = 0;
  std::size_t entry_bytes = 0;
  std::size_t small_bytes = 0;
  Queue small;
  Queue main;
  std::unordered_map<KeyRef, Queue::iterator, KeyRefHash, KeyRefEq> index;
  std::unordered_map<std::string, Group, StringHash, std::equal_to<>> groups;
  // Ghost FIFO of evicted key hashes; a slot is live while `ghost_live` maps its hash to its
  // sequence number (re-inserting a key drops it from the map and leaves a dead slot behind).
  std::deque<std::pair<std::size_t, std::uint64_t>> ghost;
  std::unordered_map<std::size_t, std::uint64_t> ghost_live;
  std::uint64_t ghost_seq = 0;

  // Published for bytes() / entries() without taking the lock.
  std::atomic<std::size_t> published_bytes{0};
  std::atomic<std::size_t> published_entries{0};
  mutable std::atomic<std::uint64_t> hits{0};
  mutable std::atomic<std::uint64_t> misses{0};
  std::atomic<std::uint64_t> evictions{0};
  std::atomic<std::uint64_t> inserts{0};

  std::size_t ghost_bytes() const { return ghost.size() * kGhostChargedBytes; }

  void publish() {
    published_bytes.store(entry_bytes + ghost_bytes(), std::memory_order_relaxed);
    published_entries.store(index.size(), std::memory_order_relaxed);
  }

  // A node's charge changes to `charge`.
  void recharge(Node& node, std::size_t charge) {
    entry_bytes = entry_bytes - node.charge + charge;
    if (!node.in_main) small_bytes = small_bytes - node.charge + charge;
    node.charge = charge;
  }

  // The stored node of `key`, or nullptr.
  Queue::iterator* find(std::string_view key, std::size_t hash) {
    const auto found = index.find(KeyRef{key, hash});
    return found == index.end() ? nullptr : &found->second;
  }

  void link_group(Node& node) {
    const std::string_view prefix = widget_prefix_of(node.key);
    if (prefix.empty()) return;
    auto group = groups.find(prefix);
    if (group == groups.end()) group = groups.emplace(std::string(prefix), Group{}).first;
    node.group = &group->second;
    node.group_next = node.group->head;
    if (node.group_next != nullptr) node.group_next->group_prev = &node;
    node.group->head = &node;
  }

  void unlink_group(Node& node) {
    if (node.group == nullptr) return;
    if (node.group_prev != nullptr) {
      node.group_prev->group_next = node.group_next;
    } else {
      node.group->head = node.group_next;
    }
    if (node.group_next != nullptr) node.group_next->group_prev = node.group_prev;
    if (node.group->head == nullptr) {
      const auto group = groups.find(widget_prefix_of(node.key));
      if (group != groups.end()) groups.erase(group);
    }
    node.group = nullptr;
  }

  void remove(Queue::iterator it) {
    index.erase(KeyRef{it->key, it->hash});
    unlink_group(*it);
    entry_bytes -= it->charge;
    if (it->in_main) {
      main.erase(it);
    } else {
      small_bytes -= it->charge;
      small.erase(it);
    }
  }

  void remember(std::size_t hash) {
    ghost_live[hash] = ++ghost_seq;
    ghost.emplace_back(hash, ghost_seq);
    while (ghost.size() > index.size() + kGhostSlack) forget_oldest();
  }

  void forget_oldest() {
    const auto [hash, seq] = ghost.front();
    const auto live = ghost_live.find(hash);
    if (live != ghost_live.end() && live->second == seq) ghost_live.erase(live);
    ghost.pop_front();
  }

  // S3-FIFO eviction from the small FIFO: an entry hit while there is promoted to main, one
  // never hit is dropped and its hash remembered. The promoted entry keeps its hit count, so a
  // key hit often while new gets as many extra rounds in main as one hit there.
  void evict_small() {
    const auto it = std::prev(small.end());
    if (it->freq.load(std::memory_order_relaxed) > 0) {
      it->in_main = true;
      small_bytes -= it->charge;
      main.splice(main.begin(), small, it);
      return;
    }
    const std::size_t hash = it->hash;
    remove(it);
    remember(hash);
    bump(evictions, false);  // under the exclusive lock, or by the owner
  }

  // From the main FIFO: an entry hit since it last passed the tail gets another round (with
  // one hit less), otherwise it is dropped.
  void evict_main() {
    const auto it = std::prev(main.end());
    const std::uint8_t freq = it->freq.load(std::memory_order_relaxed);
    if (freq > 0) {
      it->freq.store(freq - 1, std::memory_order_relaxed);
      main.splice(main.begin(), main, it);
      return;
    }
    remove(it);
    bump(evictions, false);  // under the exclusive lock, or by the owner
  }

  // Every step either frees an entry (at least kEntryOverheadBytes, more than the ghost slot it
  // may add), moves one entry toward the tail of main with a lower count, or drops a ghost
  // slot, so the loop ends.
  void shrink_to_budget() {
    while (entry_bytes + ghost_bytes() > budget) {
      if (!small.empty() && (small_bytes > budget / kSmallShareDivisor || main.empty())) {
        evict_small();
      } else if (!main.empty()) {
        evict_main();
      } else if (!ghost.empty()) {
        forget_oldest();
      } else {
        break;
      }
    }
  }

  void clear() {
    index.clear();
    groups.clear();
    small.clear();
    main.clear();
    ghost.clear();
    ghost_live.clear();
    entry_bytes = 0;
    small_bytes = 0;
  }
};

L1Cache::L1Cache(std::size_t max_bytes, std::size_t shards, Access access)
    : max_bytes_(max_bytes), locking_(access == Access::shared) {
  shards = std::max<std::size_t>(shards, 1);
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) {
    shards_.push_back(std::make_unique<Shard>());
    shards_.back()->budget = max_bytes / shards;
  }
}

L1Cache::~L1Cache() = default;

L1Cache::Shard& L1Cache::shard_for(std::size_t hash) const {
  // The map buckets use hash % prime; mixing first keeps the shard choice independent of it.
  const std::size_t mixed = (hash * 0x9E3779B97F4A7C15ull) >> 32;
  return *shards_[mixed % shards_.size()];
}

std::shared_ptr<const Entry> L1Cache::get(std::string_view key) const {
  return get(key, nullptr);
}

std::shared_ptr<const Entry> L1Cache::get(std::string_view key, const L1Annex** annex) const {
  if (annex != nullptr) *annex = nullptr;
  const std::size_t hash = hash_key(key);
  Shard& shard = shard_for(hash);
  if (max_bytes_.load(std::memory_order_relaxed) == 0) {
    bump(shard.misses, locking_);
    return nullptr;
  }
  const auto lock = lock_if<std::shared_lock<std::shared_mutex>>(locking_, shard.mutex);
  Shard::Queue::iterator* const found = shard.find(key, hash);
  if (found == nullptr) {
    bump(shard.misses, locking_);
    return nullptr;
  }
  Shard::Node& node = **found;
  // A lost race between two readers only loses one increment of a saturating counter.
  const std::uint8_t freq = node.freq.load(std::memory_order_relaxed);
  if (freq < kMaxFreq) node.freq.store(freq + 1, std::memory_order_relaxed);
  bump(shard.hits, locking_);
  if (annex != nullptr) *annex = node.annex.get();
  return node.entry;
}

void L1Cache::attach(std::string_view key, const Entry* entry,
                     std::unique_ptr<const L1Annex> annex) {
  if (locking_ || !annex) return;
  const std::size_t hash = hash_key(key);
  Shard& shard = shard_for(hash);
  Shard::Queue::iterator* const found = shard.find(key, hash);
  if (found == nullptr || (*found)->entry.get() != entry) return;
  Shard::Node& node = **found;
  const std::size_t charge = charged_bytes(node.key, *node.entry) + annex->bytes();
  if (charge > shard.budget) return;
  shard.recharge(node, charge);
  node.annex = std::move(annex);
  shard.shrink_to_budget();
  shard.publish();
}

void L1Cache::put(std::string key, std::shared_ptr<const Entry> entry) {
  if (!entry) {
    erase(key);
    return;
  }
  key.shrink_to_fit();  // the charge counts key.size(), so no hidden spare capacity
  const std::size_t hash = hash_key(key);
  const std::size_t charge = charged_bytes(key, *entry);
  Shard& shard = shard_for(hash);
  std::shared_ptr<const Entry> replaced;  // released after the lock
  const auto lock = lock_if<std::unique_lock<std::shared_mutex>>(locking_, shard.mutex);
  Shard::Queue::iterator* const found = shard.find(key, hash);
  if (charge > shard.budget) {
    if (found != nullptr) {
      replaced = std::move((*found)->entry);
      shard.remove(*found);
      shard.publish();
    }
    return;
  }
  if (found != nullptr) {
    const Shard::Queue::iterator it = *found;
    shard.recharge(*it, charge);
    replaced = std::exchange(it->entry, std::move(entry));
    it->annex.reset();  // it was the old entry's
  } else {
    // A key evicted recently and requested again was evicted too early: it skips the small
    // FIFO.
    const bool to_main = shard.ghost_live.erase(hash) > 0;
    Shard::Queue& queue = to_main ? shard.main : shard.small;
    queue.emplace_front(std::move(key), hash, std::move(entry), charge, to_main);
    const auto node = queue.begin();
    shard.index.emplace(Shard::KeyRef{node->key, hash}, node);
    shard.link_group(*node);
    shard.entry_bytes += charge;
    if (!to_main) shard.small_bytes += charge;
  }
  bump(shard.inserts, false);  // under the exclusive lock, or by the owner
  shard.shrink_to_budget();
  shard.publish();
}

void L1Cache::erase(std::string_view key) {
  const std::size_t hash = hash_key(key);
  Shard& shard = shard_for(hash);
  std::shared_ptr<const Entry> erased;
  const auto lock = lock_if<std::unique_lock<std::shared_mutex>>(locking_, shard.mutex);
  Shard::Queue::iterator* const found = shard.find(key, hash);
  if (found == nullptr) return;
  erased = std::move((*found)->entry);
  shard.remove(*found);
  shard.publish();
}

void L1Cache::erase_prefix(std::string_view prefix) {
  const bool indexed = !prefix.empty() && widget_prefix_of(prefix) == prefix;
  for (const auto& shard_ptr : shards_) {
    Shard& shard = *shard_ptr;
    const auto lock = lock_if<std::unique_lock<std::shared_mutex>>(locking_, shard.mutex);
    if (indexed) {
      const auto group = shard.groups.find(prefix);
      if (group == shard.groups.end()) continue;
      // remove() drops the group with its last node; `next` is read before that.
      for (Shard::Node* node = group->second.head; node != nullptr;) {
        Shard::Node* next = node->group_next;
        shard.remove(*shard.find(node->key, node->hash));
        node = next;
      }
    } else {
      for (Shard::Queue* queue : {&shard.small, &shard.main}) {
        for (auto it = queue->begin(); it != queue->end();) {
          const auto current = it++;
          if (std::string_view(current->key).starts_with(prefix)) shard.remove(current);
        }
      }
    }
    shard.publish();
  }
}

void L1Cache::erase_prefix_if(
    std::string_view prefix,
    const std::function<bool(std::string_view key, const Entry& entry)>& erase) {
  const std::string_view widget = widget_prefix_of(prefix);
  for (const auto& shard_ptr : shards_) {
    Shard& shard = *shard_ptr;
    const auto lock = lock_if<std::unique_lock<std::shared_mutex>>(locking_, shard.mutex);
    const auto group = shard.groups.find(widget);
    if (group == shard.groups.end()) continue;
    for (Shard::Node* node = group->second.head; node != nullptr;) {
      Shard::Node* next = node->group_next;
      if (std::string_view(node->key).starts_with(prefix) && erase(node->key, *node->entry)) {
        shard.remove(*shard.find(node->key, node->hash));
      }
      node = next;
    }
    shard.publish();
  }
}

void L1Cache::clear() {
  for (const auto& shard_ptr : shards_) {
    const auto lock = lock_if<std::unique_lock<std::shared_mutex>>(locking_, shard_ptr->mutex);
    shard_ptr->clear();
    shard_ptr->publish();
  }
}

std::size_t L1Cache::bytes() const {
  std::size_t total = 0;
  for (const auto& shard : shards_) total += shard->published_bytes.load(std::memory_order_relaxed);
  return total;
}

std::size_t L1Cache::entries() const {
  std::size_t total = 0;
  for (const auto& shard : shards_) {
    total += shard->published_entries.load(std::memory_order_relaxed);
  }
  return total;
}

void L1Cache::set_max_bytes(std::size_t max_bytes) {
  max_bytes_.store(max_bytes, std::memory_order_relaxed);
  for (const auto& shard_ptr : shards_) {
    const auto lock = lock_if<std::unique_lock<std::shared_mutex>>(locking_, shard_ptr->mutex);
    shard_ptr->budget = max_bytes / shards_.size();
    shard_ptr->shrink_to_budget();
    shard_ptr->publish();
  }
}

L1Cache::Stats L1Cache::stats() const {
  Stats stats;
  for (const auto& shard : shards_) {
    stats.hits += shard->hits.load(std::memory_order_relaxed);
    stats.misses += shard->misses.load(std::memory_order_relaxed);
    stats.evictions += shard->evictions.load(std::memory_order_relaxed);
    stats.inserts += shard->inserts.load(std::memory_order_relaxed);
  }
  return stats;
}

}  // namespace wg::cache
