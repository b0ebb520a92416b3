#pragma once
// What a fetch's lock becomes once its copy is stored: "done" for a moment, and the new copy
// announced (serving::FetchLock, docs/freshness.md). Alone (FetchLock::mark_done) or with the
// entry's own write in one script (RedisStore::put with a LockDone): the lock and the entry
// share the widget's hash tag, so one round trip does both on any topology.

#include <chrono>
#include <string>

namespace wg::cache {

struct LockDone {
  std::string lock_key;  // the lock's Redis key
  std::chrono::milliseconds for_ms{0};
  std::string channel;  // none when empty
  std::string message;
};

// The Lua of it, for a script whose KEYS[key] is the lock and whose ARGV[arg], ARGV[arg + 1]
// and ARGV[arg + 2] are for_ms, channel and message.
inline std::string lock_done_lua(int key, int arg) {
  const std::string k = "KEYS[" + std::to_string(key) + "]";
  auto a = [arg](int offset) { return "ARGV[" + std::to_string(arg + offset) + "]"; };
  return "redis.call('SET', " + k + ", 'done', 'PX', " + a(0) + ")\nif " + a(1) +
         " ~= '' then redis.call('PUBLISH', " + a(1) + ", " + a(2) + ") end\n";
}

}  // namespace wg::cache
