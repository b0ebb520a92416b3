#pragma once
// The fleet's demand in Redis (docs/prefetch.md): one sorted set per freshness day, keys scored
// by requests, added to by every instance's control thread and read by the prefetch's leader.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <vector>

#include "prefetch_plan.hpp"
#include "serving/demand_counter.hpp"
#include "widget_gateway/common/key_space.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::prefetch {

// A day's demand is read at the next boundary and its waste the day after: three days cover
// both, whatever the order instances write in.
inline constexpr std::chrono::hours kDemandKept{72};

// Threads: the control thread's (its Redis connection).
class DemandStore {
 public:
  DemandStore(redis::Client& redis, KeySpace keys) : redis_(redis), keys_(std::move(keys)) {}

  // Adds `counts` to the demand of the day that began at `day_start_ms`; false when Redis did
  // not take all of it (the caller keeps it for the next hand-over).
  boost::asio::awaitable<bool> add(std::int64_t day_start_ms, const serving::DemandCounts& counts);

  // The day's keys asked for at least `min_requests` times, most asked first, at most `max`;
  // nullopt when Redis did not answer.
  boost::asio::awaitable<std::optional<std::vector<DemandedKey>>> most_asked(
      std::int64_t day_start_ms, std::uint64_t min_requests, std::size_t max);

  // How many of `keys` the day's demand has no request for; nullopt when Redis did not answer.
  boost::asio::awaitable<std::optional<std::uint64_t>> never_asked(
      std::int64_t day_start_ms, const std::vector<std::string>& keys);

 private:
  redis::Client& redis_;
  KeySpace keys_;
};

}  // namespace wg::prefetch
