#pragma once
// Every Redis key and channel the gateway uses, spelled here and nowhere else
// (docs/redis-keys.md has the layout and why it is safe in Redis Cluster).
//
// Each name starts with redis.key_prefix (default "wg:"), so fleets with different prefixes
// can share one Redis without seeing each other's entries, purges or quota. Keys that one
// command or script touches together share one hash tag ({...}), so they live in one cluster
// slot: a widget's keys are tagged with its escaped id, a month's quota keys with the month.
// Keys always used alone (the purge-all generation, the known-widget set) carry no tag.
//
// Header-only: the quota's pure core names its keys here too, without linking the cache.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace wg {

inline constexpr std::string_view kDefaultKeyPrefix = "wg:";

// Logical keys: how the process names cache entries, in L1, in logs and in the admin API,
// whatever the prefix: "wg:{<escaped id>}:<rest>" as api::cache_key builds them (and names
// derived from those, such as a fetch lock's). Only KeySpace turns them into Redis keys.
// kLogicalWidgetHead is how every logical key starts, up to its hash tag's opening brace;
// kLogicalHead is the part of it that KeySpace replaces with the Redis prefix.
inline constexpr std::string_view kLogicalWidgetHead = "wg:{";
inline constexpr std::string_view kLogicalHead =
    kLogicalWidgetHead.substr(0, kLogicalWidgetHead.size() - 1);

struct KeyParts {
  std::string_view escaped_id;
  std::string_view rest;
};
// Splits a logical key "wg:{id}:rest" into the escaped id and the rest; nullopt when the key
// does not have that shape. Escaped ids never hold '}' (api::escape_key_id).
inline std::optional<KeyParts> split_key(std::string_view logical_key) {
  if (!logical_key.starts_with(kLogicalWidgetHead)) return std::nullopt;
  const std::string_view tagged = logical_key.substr(kLogicalWidgetHead.size());
  const auto close = tagged.find("}:");
  if (close == std::string_view::npos) return std::nullopt;
  return KeyParts{tagged.substr(0, close), tagged.substr(close + 2)};
}

// "wg:{id}:", the logical prefix of every key of a widget (as api::widget_key_prefix builds
// it from the raw id): what a purge drops from L1.
inline std::string logical_widget_prefix(std::string_view escaped_id) {
  std::string prefix(kLogicalWidgetHead);
  prefix.append(escaped_id).append("}:");
  return prefix;
}

// What Redis Cluster hashes to place `key`: the text between the first '{' and the next '}'
// when that is not empty, else the whole key.
inline std::string_view hash_tag(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

// A value, copied into each component that talks to Redis at its construction.
class KeySpace {
 public:
  // `prefix` must hold no brace: it would open a hash tag of its own and split keys that must
  // share a slot (redis.key_prefix is validated so; anything else is a bug).
  explicit KeySpace(std::string prefix = std::string(kDefaultKeyPrefix))
      : prefix_(std::move(prefix)) {
    if (prefix_.find_first_of("{}") != std::string::npos) {
      throw std::invalid_argument("a Redis key prefix must not contain braces");
    }
  }

  const std::string& prefix() const { return prefix_; }

  // A widget's keys, tagged with its escaped id (api::escape_key_id).
  // "<prefix>{id}:g<global>.<widget>:<rest>": a cache entry under the purge generations it
  // was stored with (see generations.hpp).
  std::string entry(const KeyParts& parts, std::uint64_t global, std::uint64_t widget) const {
    std::string key = widget_head(parts.escaped_id);
    key.push_back('g');
    key.append(std::to_string(global)).push_back('.');
    key.append(std::to_string(widget)).push_back(':');
    key.append(parts.rest);
    return key;
  }
  // "<prefix>{id}:gen": the widget's purge generation (a counter).
  std::string widget_generation(std::string_view escaped_id) const {
    return widget_head(escaped_id) + "gen";
  }
  // "<prefix>{id}:soft": the widget's last soft purge (ms since the epoch).
  std::string widget_soft(std::string_view escaped_id) const {
    return widget_head(escaped_id) + "soft";
  }
  // A logical key as a Redis key with no generation in it: "wg:{id}:rest" becomes
  // "<prefix>{id}:rest" (same tag). Fetch locks are named so (serving::lock_key_for).
  std::string unversioned(std::string_view logical_key) const {
    if (logical_key.starts_with(kLogicalHead)) logical_key.remove_prefix(kLogicalHead.size());
    return prefix_ + std::string(logical_key);
  }

  // "<prefix>gen": the purge-all generation (a counter), always read and written alone.
  std::string global_generation() const { return prefix_ + "gen"; }
  // "<prefix>soft": the last soft purge-all (ms since the epoch), always read and written alone.
  std::string global_soft() const { return prefix_ + "soft"; }
  // "<prefix>purge": the pub/sub channel purges are announced on.
  std::string purge_channel() const { return prefix_ + "purge"; }
  // "<prefix>stored": the pub/sub channel new copies are announced on (docs/freshness.md).
  std::string stored_channel() const { return prefix_ + "stored"; }
  // "<prefix>unconfirmed": keys whose copy holds back an upstream answer (a sorted set: logical
  // key, scored by the hold's start in ms), for /admin/status.
  std::string unconfirmed() const { return prefix_ + "unconfirmed"; }
  // "<prefix>known-widgets": the set of ids upstream answered 200 for.
  std::string known_widgets() const { return prefix_ + "known-widgets"; }

  // The prefetch's keys (docs/prefetch.md), each always used alone, named by the start of a
  // freshness day (the refresh boundary, refresh_lag included, in ms since the epoch).
  // "<prefix>demand:<ms>": the fleet's requests per logical key in the day from that boundary
  // (a sorted set).
  std::string demand(std::int64_t day_start_ms) const {
    return prefix_ + "demand:" + std::to_string(day_start_ms);
  }
  // "<prefix>prefetch:<ms>": the prefetch of that boundary: how far it got and what it did (a
  // hash), so that a leader taking over goes on from there.
  std::string prefetch_progress(std::int64_t day_start_ms) const {
    return prefix_ + "prefetch:" + std::to_string(day_start_ms);
  }
  // "<prefix>prefetched:<ms>": the keys that prefetch fetched (a set), for its waste count.
  std::string prefetched(std::int64_t day_start_ms) const {
    return prefix_ + "prefetched:" + std::to_string(day_start_ms);
  }
  // "<prefix>prefetch:leader": the instance leading the prefetch (a lease: SET NX PX).
  std::string prefetch_leader() const { return prefix_ + "prefetch:leader"; }

  // A month's quota keys, tagged with the month ("YYYY-MM"): one script touches all three.
  // "<prefix>quota:{YYYY-MM}": the charged count.
  std::string quota(std::string_view month) const {
    std::string key = prefix_ + "quota:{";
    key.append(month).push_back('}');
    return key;
  }
  // "<prefix>quota:{YYYY-MM}:leases": the instances' lease ledgers.
  std::string quota_leases(std::string_view month) const { return quota(month) + ":leases"; }
  // "<prefix>quota:{YYYY-MM}:unknown": lookups of ids upstream did not know.
  std::string quota_unknown(std::string_view month) const { return quota(month) + ":unknown"; }

 private:
  std::string widget_head(std::string_view escaped_id) const {
    std::string head;
    head.reserve(prefix_.size() + escaped_id.size() + 3);
    head.append(prefix_).push_back('{');
    head.append(escaped_id).append("}:");
    return head;
  }

  std::string prefix_;
};

}  // namespace wg
