#include <boost/test/unit_test.hpp>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "widget_gateway/cache/l1_cache.hpp"

// Counts the bytes the process holds on the heap (as malloc really reserves them, rounding
// included), so the test can check that charged_bytes() is not below the real cost. Only the
// plain forms are replaced; the aligned ones keep the library's pairing of aligned_alloc/free.
namespace {
std::atomic<std::int64_t> g_heap_bytes{0};
}  // namespace

void* operator new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  g_heap_bytes.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)));
  return p;
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
// The nothrow forms too (simdjson allocates its documents with them): every plain form then
// pairs with the free() below, which ASan checks now that other suites share this program.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p != nullptr) g_heap_bytes.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)));
  return p;
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_heap_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)));
  std::free(p);
}
void operator delete[](void* p) noexcept {
  operator delete(p);
}
void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  operator delete(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  operator delete(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  operator delete(p);
}

using wg::cache::charged_bytes;
using wg::cache::Entry;
using wg::cache::L1Cache;

namespace {

std::shared_ptr<const Entry> make_entry(std::size_t body_size, std::size_t variants = 0,
                                        char fill = 'x') {
  auto entry = std::make_shared<Entry>();
  entry->body.assign(body_size, fill);
  entry->etag = "\"0123456789abcdef\"";
  for (std::size_t i = 0; i < variants; ++i) {
    entry->variants.emplace_back(i % 2 == 0 ? "gzip" : "br", std::string(body_size / 3, 'z'));
  }
  return entry;
}

// An annex of a given size that counts how many of its kind are alive.
class CountedAnnex final : public wg::cache::L1Annex {
 public:
  CountedAnnex(std::size_t bytes, int& alive) : bytes_(bytes), alive_(alive) { ++alive_; }
  ~CountedAnnex() override { --alive_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  std::size_t bytes_;
  int& alive_;
};

std::string widget_key(int widget, int page) {
  return "wg:{" + std::to_string(widget) + "aaaaaaaaaaaaaaaaaaaaa}:r:*:20:" + std::to_string(page);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(l1_cache_test)

BOOST_AUTO_TEST_CASE(charged_bytes_counts_every_part) {
  Entry entry;
  entry.body = std::string(1000, 'b');
  entry.etag = "\"0123456789abcdef\"";
  const std::size_t plain = charged_bytes("k", entry);
  BOOST_TEST(plain >= wg::cache::kEntryOverheadBytes + 1000 + 18);
  entry.variants.emplace_back("gzip", std::string(400, 'g'));
  BOOST_TEST(charged_bytes("k", entry) >= plain + 400 + wg::cache::kVariantOverheadBytes);
  BOOST_TEST(charged_bytes(std::string(100, 'k'), entry) >= charged_bytes("k", entry) + 99);
  // A body file is memory too, outside the heap.
  const std::size_t with_variant = charged_bytes("k", entry);
  auto files = std::make_shared<wg::cache::BodyFiles>(1);
  entry.body_file = files->make(entry.body);
  BOOST_REQUIRE(entry.body_file);
  BOOST_TEST(charged_bytes("k", entry) == with_variant + 1000);
}

// The charge must cover what the cache really holds on the heap: node, map slot, index share,
// Entry, control block and strings, with malloc's rounding.
BOOST_AUTO_TEST_CASE(charge_is_not_below_real_allocation) {
  L1Cache cache(std::size_t{1} << 32, 4);
  std::mt19937 rng(7);
  constexpr int kEntries = 3000;
  const std::int64_t before = g_heap_bytes.load();
  for (int i = 0; i < kEntries; ++i) {
    // A mix of widget keys (indexed for purges) and other keys, small and large bodies, with
    // and without variants, built by make_shared (one block) or new (two blocks).
    std::string key = i % 3 == 0 ? "other:" + std::to_string(i) : widget_key(i % 50, i);
    std::shared_ptr<Entry> entry =
        i % 2 == 0 ? std::make_shared<Entry>() : std::shared_ptr<Entry>(new Entry());
    entry->body.assign(rng() % 3000, 'x');
    entry->etag = "\"0123456789abcdef\"";
    for (std::uint32_t v = 0; v < rng() % 3; ++v) {
      entry->variants.emplace_back("gzip", std::string(rng() % 500, 'z'));
    }
    cache.put(std::move(key), std::move(entry));
  }
  const std::int64_t held = g_heap_bytes.load() - before;
  BOOST_TEST_MESSAGE("heap held " << held << " bytes, charged " << cache.bytes());
  BOOST_TEST(cache.entries() == std::size_t{kEntries});
  BOOST_TEST(held > 0);
  BOOST_TEST(static_cast<std::size_t>(held) <= cache.bytes());
}

BOOST_AUTO_TEST_CASE(get_returns_what_was_put_and_put_replaces) {
  L1Cache cache(1 << 20);
  BOOST_TEST(cache.get("wg:{a}:w") == nullptr);
  const auto first = make_entry(100);
  cache.put("wg:{a}:w", first);
  BOOST_TEST(cache.get("wg:{a}:w") == first);
  const auto second = make_entry(300);
  cache.put("wg:{a}:w", second);
  BOOST_TEST(cache.get("wg:{a}:w") == second);
  BOOST_TEST(cache.entries() == 1u);
  BOOST_TEST(cache.bytes() == charged_bytes("wg:{a}:w", *second));

  const auto stats = cache.stats();
  BOOST_TEST(stats.hits == 2u);
  BOOST_TEST(stats.misses == 1u);
  BOOST_TEST(stats.inserts == 2u);
  BOOST_TEST(stats.evictions == 0u);

  cache.erase("wg:{a}:w");
  BOOST_TEST(cache.get("wg:{a}:w") == nullptr);
  BOOST_TEST(cache.entries() == 0u);
  BOOST_TEST(cache.bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(an_annex_lives_beside_its_entry_and_is_charged) {
  int alive = 0;  // before the cache: its annexes count down as it goes
  L1Cache cache(1 << 20, 1, L1Cache::Access::owner_thread);
  const auto entry = make_entry(100);
  cache.put("wg:{a}:w", entry);
  const std::size_t plain = cache.bytes();
  const wg::cache::L1Annex* annex = nullptr;
  BOOST_TEST(cache.get("wg:{a}:w", &annex) == entry);
  BOOST_TEST(annex == nullptr);  // none yet

  cache.attach("wg:{a}:w", entry.get(), std::make_unique<CountedAnnex>(700, alive));
  BOOST_TEST(alive == 1);
  BOOST_TEST(cache.bytes() == plain + 700);
  BOOST_TEST(cache.get("wg:{a}:w", &annex) == entry);
  BOOST_REQUIRE(annex != nullptr);
  BOOST_TEST(annex->bytes() == 700u);

  // A larger one replaces it, and is charged instead.
  cache.attach("wg:{a}:w", entry.get(), std::make_unique<CountedAnnex>(900, alive));
  BOOST_TEST(alive == 1);
  BOOST_TEST(cache.bytes() == plain + 900);

  // Not beside another entry than the one it was written for, nor an absent key.
  const auto other = make_entry(100);
  cache.attach("wg:{a}:w", other.get(), std::make_unique<CountedAnnex>(50, alive));
  cache.attach("wg:{b}:w", entry.get(), std::make_unique<CountedAnnex>(50, alive));
  BOOST_TEST(alive == 1);
  BOOST_TEST(cache.bytes() == plain + 900);

  // A new copy of the key drops it, as an erase does.
  cache.put("wg:{a}:w", other);
  BOOST_TEST(alive == 0);
  BOOST_TEST(cache.get("wg:{a}:w", &annex) == other);
  BOOST_TEST(annex == nullptr);
  cache.attach("wg:{a}:w", other.get(), std::make_unique<CountedAnnex>(300, alive));
  cache.erase("wg:{a}:w");
  BOOST_TEST(alive == 0);
  BOOST_TEST(cache.bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(annexes_count_in_the_bound) {
  // Room for about ten entries: their annexes, once charged, push the oldest out.
  const std::size_t one = charged_bytes(widget_key(1, 1), *make_entry(1000));
  int alive = 0;  // before the cache: its annexes count down as it goes
  L1Cache cache(10 * one + one / 2, 1, L1Cache::Access::owner_thread);
  std::vector<std::shared_ptr<const Entry>> entries;
  for (int i = 0; i < 10; ++i) {
    entries.push_back(make_entry(1000));
    cache.put(widget_key(1, i), entries.back());
  }
  BOOST_TEST(cache.entries() == 10u);
  for (int i = 0; i < 10; ++i) {
    cache.attach(widget_key(1, i), entries[i].get(), std::make_unique<CountedAnnex>(one, alive));
    BOOST_TEST(cache.bytes() <= cache.max_bytes());
  }
  BOOST_TEST(cache.entries() < 10u);
  BOOST_TEST(alive == static_cast<int>(cache.entries()));
  // An annex that alone would not fit a shard is not kept.
  cache.attach(widget_key(1, 9), entries[9].get(),
               std::make_unique<CountedAnnex>(cache.max_bytes(), alive));
  BOOST_TEST(cache.bytes() <= cache.max_bytes());
}

BOOST_AUTO_TEST_CASE(a_shared_cache_keeps_no_annex) {
  int alive = 0;
  L1Cache cache(1 << 20);  // Access::shared: an annex would be read without the lock
  const auto entry = make_entry(100);
  cache.put("k", entry);
  cache.attach("k", entry.get(), std::make_unique<CountedAnnex>(10, alive));
  BOOST_TEST(alive == 0);
  const wg::cache::L1Annex* annex = nullptr;
  BOOST_TEST(cache.get("k", &annex) == entry);
  BOOST_TEST(annex == nullptr);
}

BOOST_AUTO_TEST_CASE(entry_larger_than_a_shard_is_not_stored_and_drops_the_old_one) {
  L1Cache cache(64 * 1024, 4);  // 16 KiB per shard
  cache.put("k", make_entry(1000));
  BOOST_REQUIRE(cache.get("k") != nullptr);
  cache.put("k", make_entry(20 * 1024));
  BOOST_TEST(cache.get("k") == nullptr);  // never the older version
  BOOST_TEST(cache.entries() == 0u);
  cache.put("k", nullptr);
  BOOST_TEST(cache.get("k") == nullptr);
}

BOOST_AUTO_TEST_CASE(disabled_cache_stores_nothing) {
  L1Cache cache(0);
  cache.put("wg:{a}:w", make_entry(10));
  BOOST_TEST(cache.get("wg:{a}:w") == nullptr);
  BOOST_TEST(cache.entries() == 0u);
  BOOST_TEST(cache.bytes() == 0u);
  BOOST_TEST(cache.stats().misses == 1u);
  BOOST_TEST(cache.stats().inserts == 0u);
}

// Entries never hit leave in insertion order (FIFO among one-hit keys).
BOOST_AUTO_TEST_CASE(unhit_entries_leave_oldest_first) {
  const std::size_t size = charged_bytes("key-000", *make_entry(4000));
  L1Cache cache(size * 50, 1);
  for (int i = 0; i < 200; ++i) cache.put("key-" + std::to_string(1000 + i), make_entry(4000));
  BOOST_TEST(cache.bytes() <= size * 50);
  BOOST_TEST(cache.get("key-1000") == nullptr);
  BOOST_TEST(cache.get("key-1199") != nullptr);
  BOOST_TEST(cache.get("key-1190") != nullptr);
  BOOST_TEST(cache.stats().evictions >= 150u);
}

// S3-FIFO: keys hit after insertion are promoted to the main FIFO, so a long scan of one-hit
// keys cycles through the small FIFO and the hot set survives (plain LRU would flush it).
BOOST_AUTO_TEST_CASE(scan_of_one_hit_keys_does_not_flush_hot_keys) {
  const std::size_t size = charged_bytes("hot-00", *make_entry(4000));
  L1Cache cache(size * 100, 1);
  std::vector<std::string> hot;
  for (int i = 0; i < 30; ++i) {
    hot.push_back("hot-" + std::to_string(10 + i));
    cache.put(hot.back(), make_entry(4000));
  }
  for (const auto& key : hot) BOOST_REQUIRE(cache.get(key) != nullptr);
  for (int i = 0; i < 5000; ++i) cache.put("scan-" + std::to_string(i), make_entry(4000));
  for (const auto& key : hot) BOOST_CHECK_MESSAGE(cache.get(key) != nullptr, key);
  BOOST_TEST(cache.bytes() <= size * 100);
  BOOST_TEST(cache.get("scan-0") == nullptr);
}

// A key evicted without a hit and put again soon (it was evicted too early) is remembered by
// the ghost FIFO and goes straight to the main FIFO, where the next scan cannot reach it.
BOOST_AUTO_TEST_CASE(recently_evicted_key_is_readmitted_to_main) {
  const std::size_t size = charged_bytes("again-0", *make_entry(4000));
  L1Cache cache(size * 100, 1);
  cache.put("again-0", make_entry(4000));
  for (int i = 0; i < 150; ++i) cache.put("scan-a-" + std::to_string(i), make_entry(4000));
  BOOST_REQUIRE(cache.get("again-0") == nullptr);
  cache.put("again-0", make_entry(4000));
  for (int i = 0; i < 1000; ++i) cache.put("scan-b-" + std::to_string(i), make_entry(4000));
  BOOST_TEST(cache.get("again-0") != nullptr);
}

BOOST_AUTO_TEST_CASE(main_fifo_evicts_entries_not_hit_again) {
  const std::size_t size = charged_bytes("m-000", *make_entry(4000));
  L1Cache cache(size * 40, 1);
  // 30 keys promoted to main by one hit each, then 10 of them kept hot while new keys, each
  // hit once, keep pushing entries through main.
  for (int i = 0; i < 30; ++i) cache.put("m-" + std::to_string(100 + i), make_entry(4000));
  for (int i = 0; i < 30; ++i) BOOST_REQUIRE(cache.get("m-" + std::to_string(100 + i)));
  for (int round = 0; round < 80; ++round) {
    for (int i = 0; i < 10; ++i) BOOST_REQUIRE(cache.get("m-" + std::to_string(100 + i)));
    for (int i = 0; i < 5; ++i) {
      const std::string key = "n-" + std::to_string(round * 10 + i);
      cache.put(key, make_entry(4000));
      cache.get(key);  // hit once: each new key is promoted too and competes for main
    }
  }
  for (int i = 0; i < 10; ++i) BOOST_TEST(cache.get("m-" + std::to_string(100 + i)) != nullptr);
  int cold_left = 0;
  for (int i = 10; i < 30; ++i) cold_left += cache.get("m-" + std::to_string(100 + i)) ? 1 : 0;
  BOOST_TEST(cold_left == 0);
  BOOST_TEST(cache.bytes() <= size * 40);
}

BOOST_AUTO_TEST_CASE(erase_prefix_removes_one_widget_only) {
  L1Cache cache(1 << 22, 4);
  for (int page = 0; page < 20; ++page) {
    cache.put("wg:{a}:r:*:20:" + std::to_string(page * 20), make_entry(50));
    cache.put("wg:{ab}:r:*:20:" + std::to_string(page * 20), make_entry(50));
  }
  cache.put("wg:{a}:w", make_entry(50));
  cache.put("wg:{ab}:w", make_entry(50));
  cache.put("other:wg:{a}:w", make_entry(50));
  BOOST_REQUIRE(cache.entries() == 43u);

  cache.erase_prefix("wg:{a}:");
  BOOST_TEST(cache.entries() == 22u);
  BOOST_TEST(cache.get("wg:{a}:w") == nullptr);
  BOOST_TEST(cache.get("wg:{a}:r:*:20:0") == nullptr);
  BOOST_TEST(cache.get("wg:{ab}:w") != nullptr);
  BOOST_TEST(cache.get("other:wg:{a}:w") != nullptr);

  // The widget's index group is rebuilt by later puts.
  cache.put("wg:{a}:w", make_entry(50));
  cache.erase_prefix("wg:{a}:");
  BOOST_TEST(cache.get("wg:{a}:w") == nullptr);

  // Any other prefix is served by a scan.
  cache.erase_prefix("wg:{a");
  BOOST_TEST(cache.entries() == 1u);
  BOOST_TEST(cache.get("other:wg:{a}:w") != nullptr);
  cache.erase_prefix("");
  BOOST_TEST(cache.entries() == 0u);
  BOOST_TEST(cache.bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(clear_empties_everything) {
  L1Cache cache(1 << 20, 4);
  for (int i = 0; i < 50; ++i) cache.put(widget_key(i, i), make_entry(100));
  cache.clear();
  BOOST_TEST(cache.entries() == 0u);
  BOOST_TEST(cache.bytes() == 0u);
  BOOST_TEST(cache.get(widget_key(1, 1)) == nullptr);
  cache.put(widget_key(1, 1), make_entry(100));
  BOOST_TEST(cache.get(widget_key(1, 1)) != nullptr);
}

BOOST_AUTO_TEST_CASE(set_max_bytes_shrinks_disables_and_grows) {
  L1Cache cache(1 << 20, 4);
  for (int i = 0; i < 300; ++i) cache.put("k" + std::to_string(i), make_entry(2000));
  BOOST_REQUIRE(cache.bytes() > 200 * 1024);
  const std::size_t before = cache.entries();

  cache.set_max_bytes(200 * 1024);
  BOOST_TEST(cache.bytes() <= 200u * 1024);
  BOOST_TEST(cache.entries() < before);
  BOOST_TEST(cache.entries() > 0u);

  cache.set_max_bytes(0);
  BOOST_TEST(cache.entries() == 0u);
  BOOST_TEST(cache.bytes() == 0u);
  cache.put("k1", make_entry(10));
  BOOST_TEST(cache.get("k1") == nullptr);

  cache.set_max_bytes(1 << 20);
  cache.put("k1", make_entry(10));
  BOOST_TEST(cache.get("k1") != nullptr);
}

// Property: under random mixes of keys, sizes and operations the bound holds after every
// operation, and a lookup returns either nothing or the last version put for that key.
BOOST_AUTO_TEST_CASE(byte_bound_and_freshness_hold_under_random_operations) {
  for (const std::uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    std::mt19937 rng(seed);
    const std::size_t max_bytes = 16 * 1024 + rng() % (512 * 1024);
    const std::size_t shards = 1 + rng() % 16;
    L1Cache cache(max_bytes, shards);
    std::map<std::string, std::shared_ptr<const Entry>> last;
    const int key_space = 20 + static_cast<int>(rng() % 500);
    for (int op = 0; op < 20000; ++op) {
      const int widget = static_cast<int>(rng() % 40);
      const std::string key = rng() % 4 == 0 ? "plain-" + std::to_string(rng() % key_space)
                                             : widget_key(widget, rng() % key_space);
      const std::uint32_t dice = rng() % 100;
      if (dice < 45) {
        // Sizes from tiny to larger than a shard.
        const std::size_t size = std::size_t{1} << (rng() % 17);
        auto entry = make_entry(size + rng() % size, rng() % 3);
        last[key] = entry;
        cache.put(key, entry);
      } else if (dice < 90) {
        const auto got = cache.get(key);
        if (got) BOOST_REQUIRE(got == last[key]);
      } else if (dice < 97) {
        cache.erase(key);
        last.erase(key);
        BOOST_REQUIRE(cache.get(key) == nullptr);
      } else if (dice < 99) {
        const std::string prefix = "wg:{" + std::to_string(widget) + "aaaaaaaaaaaaaaaaaaaaa}:";
        cache.erase_prefix(prefix);
        std::erase_if(last, [&](const auto& kv) { return kv.first.starts_with(prefix); });
      } else {
        cache.set_max_bytes(16 * 1024 + rng() % (512 * 1024));
      }
      BOOST_REQUIRE_LE(cache.bytes(), cache.max_bytes());
    }
    // Every entry still stored is the last version, and entries() agrees with lookups.
    std::size_t found = 0;
    for (const auto& [key, entry] : last) {
      const auto got = cache.get(key);
      if (got) {
        ++found;
        BOOST_REQUIRE(got == entry);
      }
    }
    BOOST_TEST(found == cache.entries());
  }
}

BOOST_AUTO_TEST_CASE(concurrent_get_put_from_four_threads) {
  constexpr std::size_t kMax = 256 * 1024;
  L1Cache cache(kMax, 8);
  std::atomic<bool> bound_broken{false};
  std::atomic<bool> wrong_entry{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int op = 0; op < 20000; ++op) {
        const int id = static_cast<int>(rng() % 300);
        const std::string key = widget_key(id % 30, id);
        // The body's fill byte is derived from the key, so a lookup can tell a mixed-up entry.
        const char fill = static_cast<char>('a' + id % 26);
        const std::uint32_t dice = rng() % 10;
        if (dice < 4) {
          cache.put(key, make_entry(100 + rng() % 6000, rng() % 2, fill));
        } else if (dice < 9) {
          const auto got = cache.get(key);
          if (got && !got->body.empty() && got->body[0] != fill) wrong_entry = true;
        } else if (op % 50 == 0) {
          cache.erase_prefix("wg:{" + std::to_string(id % 30) + "aaaaaaaaaaaaaaaaaaaaa}:");
        } else {
          cache.erase(key);
        }
        if (cache.bytes() > kMax) bound_broken = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  BOOST_TEST(!bound_broken.load());
  BOOST_TEST(!wrong_entry.load());
  BOOST_TEST(cache.bytes() <= kMax);
  const auto stats = cache.stats();
  BOOST_TEST(stats.hits + stats.misses > 0u);
}

BOOST_AUTO_TEST_SUITE_END()  // l1_cache_test
