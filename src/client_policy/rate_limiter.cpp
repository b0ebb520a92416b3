#include "widget_gateway/client_policy/rate_limiter.hpp"

#include <algorithm>
#include <cmath>

#include "widget_gateway/client_policy/trusted_proxies.hpp"

namespace wg::client_policy {

namespace {

using Duration = SteadyTime::duration;

// Bounds that keep every time point arithmetic far from overflow, whatever the config says.
constexpr Duration kMaxInterval = std::chrono::hours(24 * 365);
constexpr Duration kMaxTolerance = std::chrono::hours(24 * 365 * 10);

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

std::chrono::seconds ceil_seconds(Duration d) {
  auto s = std::chrono::ceil<std::chrono::seconds>(d);
  return std::max(s, std::chrono::seconds(1));
}

}  // namespace

std::size_t RateLimiter::KeyHash::operator()(const Key& key) const {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  for (int i = 0; i < 8; ++i) hi = (hi << 8) | key[i];
  for (int i = 8; i < 16; ++i) lo = (lo << 8) | key[i];
  return static_cast<std::size_t>(mix(mix(hi ^ seed) ^ lo));
}

RateLimiter::RateLimiter(double rate_per_second, std::uint32_t burst, std::size_t max_tracked,
                         std::size_t shards, std::uint64_t hash_seed)
    : hash_{hash_seed} {
  enabled_ = std::isfinite(rate_per_second) && rate_per_second > 0;
  if (!enabled_) return;
  using namespace std::chrono;
  double interval_ns = std::min(1e9 / rate_per_second, double(nanoseconds(kMaxInterval).count()));
  interval_ = duration_cast<Duration>(nanoseconds(std::max<std::int64_t>(1, llround(interval_ns))));
  std::uint64_t extra = std::max<std::uint32_t>(burst, 1) - 1;
  // Saturating (burst - 1) * interval_.
  std::uint64_t cap = static_cast<std::uint64_t>(kMaxTolerance.count());
  std::uint64_t step = static_cast<std::uint64_t>(interval_.count());
  tolerance_ = Duration(extra > cap / step ? cap : extra * step);

  max_tracked = std::max<std::size_t>(max_tracked, 1);
  shards = std::clamp<std::size_t>(shards, 1, max_tracked);
  per_shard_ = max_tracked / shards;  // total never exceeds max_tracked
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) {
    shards_.push_back(std::make_unique<Shard>(hash_seed ^ 0x5bd1e995ULL));
  }
}

RateLimiter::Key RateLimiter::key_of(const boost::asio::ip::address& client) {
  Key key{};
  auto address = normalize_address(client);
  if (address.is_v4()) {
    // As the IPv4-mapped IPv6 address: its low 64 bits are not zero, those of every /64 key
    // below are, so the two kinds never collide.
    auto v4 = address.to_v4().to_bytes();
    key[10] = 0xFF;
    key[11] = 0xFF;
    std::copy(v4.begin(), v4.end(), key.begin() + 12);
  } else {
    auto v6 = address.to_v6().to_bytes();
    std::copy(v6.begin(), v6.begin() + 8, key.begin());
  }
  return key;
}

RateLimiter::Decision RateLimiter::acquire(const boost::asio::ip::address& client, SteadyTime now) {
  if (!enabled_) return {};
  Key key = key_of(client);
  Shard& shard = *shards_[hash_(key) % shards_.size()];

  std::lock_guard lock(shard.mutex);
  auto it = shard.slots.find(key);
  if (it == shard.slots.end()) {
    if (shard.slots.size() >= per_shard_) {
      shard.slots.erase(shard.lru.back());
      shard.lru.pop_back();
    }
    shard.lru.push_front(key);
    // A new client has a full bucket: its next arrival is due "now".
    it = shard.slots.emplace(key, Slot{now, shard.lru.begin()}).first;
  } else {
    shard.lru.splice(shard.lru.begin(), shard.lru, it->second.lru);
  }

  Slot& slot = it->second;
  // A full bucket does not keep filling: the arrival time never lags behind now.
  SteadyTime tat = std::max(slot.tat, now);
  if (tat - now > tolerance_) {
    // Refused; nothing is taken. One token is back when tat - tolerance is reached.
    return {false, ceil_seconds(tat - tolerance_ - now)};
  }
  slot.tat = tat + interval_;
  return {};
}

void RateLimiter::refund(const boost::asio::ip::address& client, SteadyTime now) {
  if (!enabled_) return;
  Key key = key_of(client);
  Shard& shard = *shards_[hash_(key) % shards_.size()];
  std::lock_guard lock(shard.mutex);
  auto it = shard.slots.find(key);
  if (it == shard.slots.end()) return;
  // Never below now: a bucket holds at most `burst` tokens.
  it->second.tat = std::max(it->second.tat - interval_, now);
}

std::size_t RateLimiter::tracked() const {
  std::size_t total = 0;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    total += shard->slots.size();
  }
  return total;
}

}  // namespace wg::client_policy
