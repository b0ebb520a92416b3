#include "cache_tier.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "widget_gateway/metrics/gateway_metrics.hpp"

namespace wg::serving {
namespace asio = boost::asio;

struct CacheTier::Read {
  explicit Read(std::vector<std::string> read_keys, const asio::any_io_executor& ex)
      : keys(std::move(read_keys)), done(ex, asio::steady_timer::time_point::max()) {}
  std::vector<std::string> keys;
  std::vector<Found> found;  // by keys' order, once finished
  bool finished = false;
  asio::steady_timer done;  // never expires: cancelled when the read is finished
};

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

std::shared_ptr<const cache::Entry> CacheTier::from_l1(const std::string& key,
                                                       const cache::L1Annex** annex) {
  auto entry = l1_.get(key, annex);
  // The one comparison a hit pays: copies stored since the policy took effect conform to it.
  if (entry && entry->stored_at < policy_since_) {
    auto conforming = held(entry);
    if (conforming != entry) {
      if (annex != nullptr) *annex = nullptr;  // the old copy's
      l1_.put(key, conforming);
      entry = std::move(conforming);
    }
  }
  return entry;
}

std::shared_ptr<const cache::Entry> CacheTier::find_local(const std::string& key,
                                                          const cache::L1Annex** annex) {
  auto entry = from_l1(key, annex);
  if (entry && clock_.wall_now() >= entry->stale_until) {
    if (annex != nullptr) *annex = nullptr;
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

asio::awaitable<Found> CacheTier::find_shared(const std::string& key, ReadSharing sharing) {
  if (sharing == ReadSharing::join) {
    if (std::shared_ptr<Read> read = under_way(key))
      co_return co_await joined(std::move(read), key);
  }
  std::vector<std::string> keys(1, key);  // (GCC 12 rejects an initializer list in a co_await)
  std::vector<Found> found = co_await read(std::move(keys));
  co_return std::move(found.front());
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
  if (reading(key) || reading(also)) {
    // Joined where a read is under way (taken now: it may be over by the time the other key's
    // is), read alone where none is; one copy always.
    std::shared_ptr<Read> also_under_way = under_way(also);
    found.first = co_await find_shared(key);
    if (also_under_way) {
      found.second = co_await joined(std::move(also_under_way), also);
    } else if (auto mine_now = from_l1(also)) {
      found.second = Found{std::move(mine_now), Tier::l1};
    } else {
      found.second = co_await find_shared(also);
    }
    co_return found;
  }
  std::vector<std::string> keys;
  keys.push_back(key);
  keys.push_back(also);
  std::vector<Found> both = co_await read(std::move(keys));
  found.first = std::move(both[0]);
  found.second = std::move(both[1]);
  co_return found;
}

asio::awaitable<std::vector<Found>> CacheTier::read(std::vector<std::string> keys) {
  auto under_way = std::make_shared<Read>(std::move(keys), co_await asio::this_coro::executor);
  for (const auto& key : under_way->keys) reads_[key] = under_way;
  std::optional<InFlightLimit::Slot> slot = co_await read_slots_.acquire(read_wait_);
  const std::vector<std::string>& read_keys = under_way->keys;
  std::vector<Found>& found = under_way->found;
  if (!slot) {
    // Too many reads ahead of this one: as if Redis had not answered (the caller serves what
    // it holds, or goes on as it does in an outage), and no reply is held for it.
    if (metrics_) metrics_->redis_read(metrics::RedisRead::shed);
    found.assign(read_keys.size(), Found{nullptr, Tier::none, true});
  } else if (metrics_) {
    metrics_->redis_read(metrics::RedisRead::sent);
  }
  if (slot && read_keys.size() == 1) {
    cache::Lookup lookup = co_await l2_.get(read_keys[0]);
    found.push_back(take_shared(read_keys[0], lookup));
  } else if (slot) {
    std::pair<cache::Lookup, cache::Lookup> both =
        co_await l2_.get_pair(read_keys[0], read_keys[1]);
    found.push_back(take_shared(read_keys[0], both.first));
    found.push_back(take_shared(read_keys[1], both.second));
  }
  slot.reset();  // the next read may go
  for (const auto& key : read_keys) {
    auto registered = reads_.find(key);
    if (registered != reads_.end() && registered->second == under_way) reads_.erase(registered);
  }
  under_way->finished = true;
  under_way->done.cancel();
  co_return found;
}

asio::awaitable<Found> CacheTier::joined(std::shared_ptr<Read> read, const std::string& key) {
  if (metrics_) metrics_->redis_read(metrics::RedisRead::joined);
  if (!read->finished) co_await read->done.async_wait(asio::as_tuple(asio::use_awaitable));
  const auto at = std::find(read->keys.begin(), read->keys.end(), key) - read->keys.begin();
  co_return read->found.at(static_cast<std::size_t>(at));
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
                                       const cache::RedisStore::Placement& placement,
                                       const cache::LockDone* done) {
  // A purge seen since the fetch began: the answer goes to the client that asked, not to the
  // cache. (A purge seen after this check drops the L1 copy like any other: the worker applies
  // it on this thread, after this store.) Generations forgotten meanwhile: Redis takes it
  // where it was placed (under old generations nobody reads it), L1 does not.
  const cache::RedisStore::Since since = l2_.since(key, placement);
  if (since == cache::RedisStore::Since::changed) co_return false;
  entry = held(key, std::move(entry));
  if (since == cache::RedisStore::Since::unchanged) l1_.put(key, entry);
  auto ec = co_await l2_.put(placement, *entry, done);
  co_return !ec;
}

std::shared_ptr<const cache::Entry> CacheTier::store_local(
    const std::string& key, std::shared_ptr<const cache::Entry> entry) {
  entry = held(key, std::move(entry));
  l1_.put(key, entry);
  return entry;
}

}  // namespace wg::serving
