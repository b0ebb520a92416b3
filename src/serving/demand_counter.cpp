#include "demand_counter.hpp"

#include <algorithm>

namespace wg::serving {

void DemandCounter::note(std::string_view key) {
  if (!enabled_) return;
  if (auto it = counts_.find(key); it != counts_.end()) {
    ++it->second;
    return;
  }
  if (counts_.size() >= max_keys_) {
    ++dropped_;
    return;
  }
  counts_.emplace(std::string(key), 1);
}

DemandCounts DemandCounter::take() {
  DemandCounts counts;
  counts.keys.reserve(counts_.size());
  for (auto& [key, requests] : counts_) counts.keys.emplace_back(key, requests);
  counts.dropped = std::exchange(dropped_, 0);
  // A fresh map: the old one's buckets would stay as large as the busiest interval made them.
  counts_ = {};
  return counts;
}

void merge_into(DemandCounts& into, DemandCounts from, std::size_t max_keys) {
  into.dropped += from.dropped;
  if (from.keys.empty()) return;
  std::unordered_map<std::string_view, std::size_t> index;
  index.reserve(into.keys.size());
  for (std::size_t i = 0; i < into.keys.size(); ++i) index.emplace(into.keys[i].first, i);
  std::vector<std::pair<std::string, std::uint64_t>> added;
  for (auto& [key, requests] : from.keys) {
    if (auto it = index.find(key); it != index.end()) {
      into.keys[it->second].second += requests;
    } else if (into.keys.size() + added.size() < max_keys) {
      added.emplace_back(std::move(key), requests);
    } else {
      into.dropped += requests;
    }
  }
  std::move(added.begin(), added.end(), std::back_inserter(into.keys));
}

}  // namespace wg::serving
