#pragma once
// The shared cache tier (L2): encoded entries in Redis, each expiring with its stale window so
// Redis itself forgets what the gateway may no longer serve. Keys carry purge generations
// (see generations.hpp): callers use logical keys, the store names them in Redis through its
// KeySpace and adds the generations.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/cache/generations.hpp"
#include "widget_gateway/cache/lock_done.hpp"
#include "widget_gateway/common/key_space.hpp"

namespace wg::redis {
class Client;
}

namespace wg::cache {

struct Lookup {
  std::error_code ec;                  // Redis unreachable, timed out or errored: treat as a miss
  std::shared_ptr<const Entry> entry;  // null on a miss or an undecodable value
  std::string physical_key;            // where it was looked up (for inspection)
};

class RedisStore {
 public:
  RedisStore(redis::Client& redis, Generations& generations, KeySpace keys = KeySpace())
      : redis_(redis), generations_(generations), keys_(std::move(keys)) {}

  const KeySpace& keys() const { return keys_; }

  boost::asio::awaitable<Lookup> get(const std::string& key);
  // Two keys of one widget (one hash tag, so one cluster slot) in one MGET: what a page miss
  // needs (the widget data and the page's window) in one round trip and one command. Keys of
  // two widgets are read with a GET each, never one command across slots.
  boost::asio::awaitable<std::pair<Lookup, Lookup>> get_pair(const std::string& first,
                                                             const std::string& second);
  // Stores `entry` until its stale_until. Returns the Redis outcome; callers usually only
  // count failures, since a failed store only costs a later miss.
  boost::asio::awaitable<std::error_code> put(const std::string& key, const Entry& entry);

  // Where an entry fetched from now on belongs: the Redis key under the purge generations
  // known now. An answer fetched before a purge and stored after it goes under the old
  // generations, which nobody reads again, never under the new ones.
  struct Placement {
    std::string physical_key;
    std::uint64_t global = 0;
    std::uint64_t widget = 0;
  };
  boost::asio::awaitable<std::pair<std::error_code, Placement>> place(const std::string& key);
  // What became of the key's generations since `placement`: unchanged, changed (a purge was
  // seen), or not known any more (forgotten in an outage, or the bounded memory of them was
  // cleared): then nobody can say.
  enum class Since { unchanged, changed, unknown };
  Since since(const std::string& key, const Placement& placement) const;
  // With `done` (may be null): the fetch lock marked done in the same script, one round trip
  // for both (cache/lock_done.hpp).
  boost::asio::awaitable<std::error_code> put(const Placement& placement, const Entry& entry,
                                              const LockDone* done = nullptr);

  // Purges: one INCR each, announced on the purge channel so every instance of the fleet (the
  // same key prefix) drops its L1.
  boost::asio::awaitable<std::error_code> purge_widget(std::string_view widget_id);
  boost::asio::awaitable<std::error_code> purge_all();
  // Soft purges (docs/freshness.md): the widget's (or the global) stamp raised to `now`,
  // announced the same way; copies stored before it are read as stale from then on.
  boost::asio::awaitable<std::error_code> soft_purge_widget(std::string_view widget_id,
                                                            WallTime now);
  boost::asio::awaitable<std::error_code> soft_purge_all(WallTime now);
  // Applies a purge announcement (from the subscriber of keys().purge_channel()); returns the
  // L1 prefix to drop ("" for everything), nullopt for a malformed message.
  std::optional<std::string> apply_purge_message(std::string_view message);
  // The soft-purge stamp a copy of `key` is held to (WallTime{}: none known).
  WallTime soft_stamp(const std::string& key) const;

  // The keys whose copy holds back an upstream answer (docs/freshness.md), fleet-wide, in
  // keys().unconfirmed(): added when a hold starts (at most kMaxHolds kept, the newest), removed
  // when its key adopts an answer again. holds() lists the `most` oldest that still hold (the
  // others, purged or evicted since, are removed as they are met) and how many the set has.
  static constexpr std::size_t kMaxHolds = 1000;
  struct PendingHold {
    std::string key;  // logical
    WallTime since;
    WallTime confirm_at;
  };
  boost::asio::awaitable<void> note_hold(const std::string& key, WallTime since);
  boost::asio::awaitable<void> forget_hold(const std::string& key);
  boost::asio::awaitable<std::pair<std::size_t, std::vector<PendingHold>>> holds(std::size_t most);

  // The Redis key `key` currently maps to (reads generations it does not know yet).
  boost::asio::awaitable<std::pair<std::error_code, std::string>> physical(const std::string& key);

 private:
  // One generation counter's (or stamp's) value (nil is 0).
  boost::asio::awaitable<std::pair<std::error_code, std::uint64_t>> read_generation(
      std::string key);
  // A widget's generation and soft stamp, in one MGET (one slot).
  struct WidgetState {
    std::error_code ec;
    std::uint64_t generation = 0;
    std::uint64_t soft_ms = 0;
  };
  boost::asio::awaitable<WidgetState> read_widget(std::string escaped_id);
  // Raises the stamp under `key` to `now` and announces `message_head` + " <stamp>" (+ tail).
  boost::asio::awaitable<std::error_code> soft_purge(std::string key, WallTime now,
                                                     std::string message_head,
                                                     std::string message_tail);

  redis::Client& redis_;
  Generations& generations_;
  const KeySpace keys_;
};

}  // namespace wg::cache
