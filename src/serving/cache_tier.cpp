#include "cache_tier.hpp"

#include "widget_gateway/metrics/gateway_metrics.hpp"

namespace wg::serving {
namespace asio = boost::asio;

void CacheTier::hold_to(const cache::TtlPolicy& policy, WallTime now) {
  if (policy_ && *policy_ == policy) return;
  if (policy_) policy_since_ = now;  // L1 was filled under another policy
  policy_ = policy;
}

std::shared_ptr<const cache::Entry> CacheTier::held(
    std::shared_ptr<const cache::Entry> entry) const {
  if (!entry || !policy_) return entry;
  const std::optional<cache::Freshness> cut = policy_->held_to(*entry);
  if (!cut) return entry;
  // A copy: the one in L1 may be in the middle of being sent (an answer in flight keeps it).
  auto copy = std::make_shared<cache::Entry>(*entry);
  copy->fresh_until = cut->fresh_until;
  copy->stale_until = cut->stale_until;
  return copy;
}

std::shared_ptr<const cache::Entry> CacheTier::held(
    const std::string& key, std::shared_ptr<const cache::Entry> entry) const {
  entry = held(std::move(entry));
  if (!entry) return entry;
  const WallTime stamp = l2_.soft_stamp(key);
  if (entry->stored_at >= stamp || entry->soft_purged) return entry;
  // Stored before a soft purge: stale from the purge on, served while it is refreshed (until
  // stale_until, whatever the stale windows), and adopted over without a last-known-good check.
  auto copy = std::make_shared<cache::Entry>(*entry);
  copy->fresh_until = std::min(copy->fresh_until, stamp);
  copy->early_at = WallTime{};
  copy->hold.reset();  // a purge ends a pending change: the next answer is adopted as it comes
  copy->soft_purged = true;
  return copy;
}

std::shared_ptr<const cache::Entry> CacheTier::from_l1(const std::string& key) {
  auto entry = l1_.get(key);
  // The one comparison a hit pays: copies stored since the policy took effect conform to it.
  if (entry && entry->stored_at < policy_since_) {
    auto conforming = held(entry);
    if (conforming != entry) {
      l1_.put(key, conforming);
      entry = std::move(conforming);
    }
  }
  return entry;
}

std::shared_ptr<const cache::Entry> CacheTier::find_local(const std::string& key) {
  auto entry = from_l1(key);
  if (entry && clock_.wall_now() >= entry->stale_until) {
    l1_.erase(key);
    entry.reset();
  }
  if (metrics_) metrics_->cache_lookup(metrics::Tier::l1, entry != nullptr);
  return entry;
}

asio::awaitable<Found> CacheTier::find(const std::string& key) {
  if (auto entry = find_local(key)) co_return Found{std::move(entry), Tier::l1};
  co_return co_await find_shared(key);
}

asio::awaitable<Found> CacheTier::find_shared(const std::string& key) {
  cache::Lookup lookup = co_await l2_.get(key);
  co_return take_shared(key, lookup);
}

asio::awaitable<std::pair<Found, Found>> CacheTier::find_pair(const std::string& key,
                                                              const std::string& also) {
  std::pair<Found, Found> found;
  if (auto entry = find_local(key)) {
    found.first = Found{std::move(entry), Tier::l1};
    co_return found;
  }
  if (auto mine = from_l1(also)) {
    // Already here: reading it again would replace this worker's copy (and what it learned,
    // such as a window's element offsets) with a fresh decode of the same bytes.
    found.first = co_await find_shared(key);
    found.second = Found{std::move(mine), Tier::l1};
    co_return found;
  }
  std::pair<cache::Lookup, cache::Lookup> both = co_await l2_.get_pair(key, also);
  found.first = take_shared(key, both.first);
  found.second = take_shared(also, both.second);
  co_return found;
}

Found CacheTier::take_shared(const std::string& key, cache::Lookup& lookup) {
  // Failed commands are counted by the Redis client itself (wg_redis_errors_total{kind}).
  if (metrics_) metrics_->cache_lookup(metrics::Tier::l2, lookup.entry != nullptr);
  Found found;
  found.shared_unavailable = static_cast<bool>(lookup.ec);
  lookup.entry = held(key, std::move(lookup.entry));
  if (!lookup.entry || clock_.wall_now() >= lookup.entry->stale_until) return found;
  l1_.put(key, lookup.entry);
  found.entry = std::move(lookup.entry);
  found.tier = Tier::l2;
  return found;
}

asio::awaitable<bool> CacheTier::store(const std::string& key,
                                       std::shared_ptr<const cache::Entry> entry) {
  // A fetch that began before a reload made it under the settings it began with.
  entry = held(key, std::move(entry));
  l1_.put(key, entry);
  auto ec = co_await l2_.put(key, *entry);
  co_return !ec;
}

asio::awaitable<bool> CacheTier::store(const std::string& key,
                                       std::shared_ptr<const cache::Entry> entry,
                                       const cache::RedisStore::Placement& placement) {
  // A purge seen since the fetch began: the answer goes to the client that asked, not to the
  // cache. (A purge seen after this check drops the L1 copy like any other: the worker applies
  // it on this thread, after this store.) Generations forgotten meanwhile: Redis takes it
  // where it was placed (under old generations nobody reads it), L1 does not.
  const cache::RedisStore::Since since = l2_.since(key, placement);
  if (since == cache::RedisStore::Since::changed) co_return false;
  entry = held(key, std::move(entry));
  if (since == cache::RedisStore::Since::unchanged) l1_.put(key, entry);
  auto ec = co_await l2_.put(placement, *entry);
  co_return !ec;
}

std::shared_ptr<const cache::Entry> CacheTier::store_local(
    const std::string& key, std::shared_ptr<const cache::Entry> entry) {
  entry = held(key, std::move(entry));
  l1_.put(key, entry);
  return entry;
}

}  // namespace wg::serving
