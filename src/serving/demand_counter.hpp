#pragma once
// What visitors ask for, counted on one io worker between two hand-overs to the control thread
// (docs/prefetch.md): the prefetch after the next daily refresh fetches again the keys asked
// for most. Only requests answered with upstream's data count (status 200), so that a prefetch
// never asks upstream for an id it did not know.
//
// Threads: one worker's, for every call. The hit path adds one count to a map no other thread
// reads or writes: no lock, no atomic, and no allocation for a key counted already since the
// last hand-over. The map is bounded: past max_keys, new keys are dropped and counted.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wg::serving {

// Keys one worker counts between two hand-overs (about 5 s apart): far more distinct keys than
// a worker serves in that time on a real site, and at most a few MB (key, count, node).
inline constexpr std::size_t kMaxKeysPerHandOver = 50'000;

struct DemandCounts {
  std::vector<std::pair<std::string, std::uint64_t>> keys;  // logical key, requests
  std::uint64_t dropped = 0;                                // requests of keys past the bound
};

class DemandCounter {
 public:
  explicit DemandCounter(std::size_t max_keys = kMaxKeysPerHandOver) : max_keys_(max_keys) {}

  // Off (cache.prefetch = false): nothing is counted, and the hit path pays one branch.
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }

  // One request of `key` answered with upstream's data.
  void note(std::string_view key);

  // What was counted since the last call; the counter starts over empty.
  DemandCounts take();

  std::size_t keys() const { return counts_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };

  bool enabled_ = true;
  std::size_t max_keys_;
  std::unordered_map<std::string, std::uint64_t, Hash, std::equal_to<>> counts_;
  std::uint64_t dropped_ = 0;
};

// Adds `from` into `into` (the control thread's merge of the workers' counts), within
// `max_keys` distinct keys: requests of keys past it are added to `into.dropped`.
void merge_into(DemandCounts& into, DemandCounts from, std::size_t max_keys);

}  // namespace wg::serving
