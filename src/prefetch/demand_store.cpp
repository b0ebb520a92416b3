#include "demand_store.hpp"

#include <charconv>
#include <string_view>

namespace wg::prefetch {
namespace asio = boost::asio;

namespace {

// KEYS[1] the day's demand; ARGV[1] its expiry (ms), then key, requests pairs.
constexpr std::string_view kAddScript = R"lua(
for i = 2, #ARGV, 2 do
  redis.call('ZINCRBY', KEYS[1], ARGV[i + 1], ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
)lua";

// KEYS[1] the day's demand; ARGV the keys: how many have no score.
constexpr std::string_view kNeverAskedScript = R"lua(
local never = 0
for i = 1, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then never = never + 1 end
end
return never
)lua";

// Pairs per script run: a bounded command, whatever a hand-over holds.
constexpr std::size_t kPairsPerCommand = 500;

std::optional<std::uint64_t> whole_number(std::string_view text) {
  // Scores come back as text ("12" or "12.0" on some servers): the whole part is the count.
  const auto dot = text.find('.');
  if (dot != std::string_view::npos) text = text.substr(0, dot);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

asio::awaitable<bool> DemandStore::add(std::int64_t day_start_ms,
                                       const serving::DemandCounts& counts) {
  const std::string key = keys_.demand(day_start_ms);
  const std::string kept = std::to_string(std::chrono::milliseconds(kDemandKept).count());
  for (std::size_t from = 0; from < counts.keys.size(); from += kPairsPerCommand) {
    const std::size_t to = std::min(counts.keys.size(), from + kPairsPerCommand);
    std::vector<std::string> args{"EVAL", std::string(kAddScript), "1", key, kept};
    args.reserve(5 + 2 * (to - from));
    for (std::size_t i = from; i < to; ++i) {
      args.push_back(counts.keys[i].first);
      args.push_back(std::to_string(counts.keys[i].second));
    }
    auto [ec, reply] = co_await redis_.command(std::move(args));
    if (ec || reply.is_error()) co_return false;
  }
  co_return true;
}

asio::awaitable<std::optional<std::vector<DemandedKey>>> DemandStore::most_asked(
    std::int64_t day_start_ms, std::uint64_t min_requests, std::size_t max) {
  std::vector<std::string> args{"ZREVRANGEBYSCORE",
                                keys_.demand(day_start_ms),
                                "+inf",
                                std::to_string(min_requests),
                                "WITHSCORES",
                                "LIMIT",
                                "0",
                                std::to_string(max)};
  auto [ec, reply] = co_await redis_.command(std::move(args));
  if (ec || reply.type != redis::Reply::Type::array) co_return std::nullopt;
  std::vector<DemandedKey> demand;
  demand.reserve(reply.elements.size() / 2);
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    const auto requests = whole_number(reply.elements[i + 1].str);
    if (!requests) continue;  // not what this script writes: never trusted
    demand.push_back({std::move(reply.elements[i].str), *requests});
  }
  co_return demand;
}

asio::awaitable<std::optional<std::uint64_t>> DemandStore::never_asked(
    std::int64_t day_start_ms, const std::vector<std::string>& keys) {
  std::uint64_t never = 0;
  for (std::size_t from = 0; from < keys.size(); from += kPairsPerCommand) {
    const std::size_t to = std::min(keys.size(), from + kPairsPerCommand);
    std::vector<std::string> args{"EVAL", std::string(kNeverAskedScript), "1",
                                  keys_.demand(day_start_ms)};
    for (std::size_t i = from; i < to; ++i) args.push_back(keys[i]);
    auto [ec, reply] = co_await redis_.command(std::move(args));
    if (ec || reply.type != redis::Reply::Type::integer) co_return std::nullopt;
    never += static_cast<std::uint64_t>(reply.integer);
  }
  co_return never;
}

}  // namespace wg::prefetch
