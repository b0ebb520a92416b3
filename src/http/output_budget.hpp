#pragma once
// The output budget (docs/listener.md, "Output budget"): the memory that answers not yet fully
// sent keep alive, bounded per listener (on the public port: one io worker, with its share of
// server.max_pending_output_bytes) and per connection
// (server.max_pending_output_bytes_per_connection).
//
// What an answer keeps alive is its body's owner (Response::body_owner): a cache entry with
// every coding it holds, or the answer's own string (kept_alive_bytes). The listener counts
// each owner once however many answers hold it, so an entry sent to many slow clients at once
// counts once, as it is in memory once; a connection counts each answer it holds in full. An
// owner that L1 still holds counts here and in wg_cache_bytes alike: the bound is on the worst
// case, when L1 has let it go.
//
// New work is taken only while one more answer, as large as the largest held lately, fits next
// to what is held: on the listener (has_room: HTTP/2 refuses a new stream, HTTP/1.1 waits
// before its handler until on_room wakes it) and, on HTTP/2, on the connection, counting the
// answers its running handlers are expected to give (room_for_handler: the handler waits for
// the connection's answers to go). Handlers running on other connections are not counted: a
// worker's hits never wait behind another client's upstream fetches. A handler's answer that
// would still cross a bound is refused (admits), unless its side holds nothing yet: every
// bound holds to within one answer, and an answer larger than a bound is still served while
// nothing else waits.
//
// Threads: with Access::owner_thread one thread (the io worker's) makes every call and nothing
// is locked; with Access::shared a mutex guards the budget. A ConnectionOutput and its holds
// belong to their connection's executor. The ServerStats fields are safe to read anywhere.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "widget_gateway/http/response.hpp"
#include "widget_gateway/http/server.hpp"

namespace wg::http {

// The memory `response` keeps alive while it is being sent: what its body_owner holds (the
// builder's owner_bytes, or the body itself), nothing without an owner.
std::size_t kept_alive_bytes(const Response& response);

class OutputBudget {
 public:
  enum class Access { shared, owner_thread };

  // `stats` receives the pending bytes and must outlive the budget.
  OutputBudget(std::size_t max_bytes, ServerStats& stats, Access access);
  OutputBudget(const OutputBudget&) = delete;
  OutputBudget& operator=(const OutputBudget&) = delete;

  std::size_t max_bytes() const { return max_; }
  // The bytes held now (each owner once).
  std::size_t pending() const {
    return static_cast<std::size_t>(stats_.output_pending_bytes.load(std::memory_order_relaxed));
  }
  // The largest answer held lately (a maximum that decays as smaller answers are held): what a
  // handler's answer is expected to keep alive. 0 before the first.
  std::size_t recent_largest() const { return recent_largest_.load(std::memory_order_relaxed); }
  // Whether new work may start: one more answer as large as the recent largest fits next to
  // what is held (always while nothing is).
  bool has_room() const;
  // Whether holding `bytes` of `owner` keeps the listener within its bound: what the owner adds
  // (nothing when it is held already) fits, or nothing is held at all.
  bool admits(const void* owner, std::size_t bytes) const;
  // One more answer holds `owner`; `bytes`: what the owner keeps alive now (it may have grown
  // since it was first held: a coding added on demand).
  void hold(const void* owner, std::size_t bytes);
  // An answer let `owner` go.
  void release(const void* owner);

  // Queues `wake`, to be called once (on the thread that makes room, so it must only post)
  // when its turn comes while there is room: waiters are woken first come, first served, as
  // many at a time as answers of the recent largest size fit (at once when that includes this
  // one). `ticket`: the one a waiter had before, to wait again in its old place (0: join at
  // the end). Returns the ticket, for forget() and for waiting again.
  std::uint64_t on_room(std::function<void()> wake, std::uint64_t ticket = 0);
  void forget(std::uint64_t ticket);

  ServerStats& stats() { return stats_; }
  // Counts a request refused past a bound, or a connection closed as a slow reader.
  void count_refused();
  void count_paused();
  void count_slow_reader();

 private:
  struct Owner {
    std::size_t answers = 0;
    std::size_t bytes = 0;
  };
  std::optional<std::unique_lock<std::mutex>> lock() const;
  bool room() const;  // has_room(), under the lock
  void set_pending(std::size_t bytes);
  // Under the lock: moves out the first waiters, as many as answers fit in the room there is.
  std::vector<std::function<void()>> take_wakers();
  // Calls them outside the lock.
  static void wake(std::vector<std::function<void()>>& wakers);
  void bump(std::atomic<std::uint64_t>& counter);

  const std::size_t max_;
  ServerStats& stats_;
  const bool shared_;
  mutable std::mutex mutex_;
  std::unordered_map<const void*, Owner> owners_;
  // Nodes of owners_ let go, reused by the next owners: holding a new owner (most answers
  // of a busy listener) costs no allocation. At most kSpareOwnerNodes.
  static constexpr std::size_t kSpareOwnerNodes = 64;
  std::vector<std::unordered_map<const void*, Owner>::node_type> spare_nodes_;
  std::size_t pending_ = 0;
  std::atomic<std::size_t> recent_largest_{0};
  std::map<std::uint64_t, std::function<void()>> waiters_;  // by ticket: first come first
  std::uint64_t next_ticket_ = 1;
};

class ConnectionOutput;

// What one answer keeps alive (its body's owner), counted until release() or destruction.
// Move-only; belongs to its connection's executor.
class OutputHold {
 public:
  OutputHold() = default;
  OutputHold(OutputHold&& other) noexcept { *this = std::move(other); }
  OutputHold& operator=(OutputHold&& other) noexcept;
  OutputHold(const OutputHold&) = delete;
  OutputHold& operator=(const OutputHold&) = delete;
  ~OutputHold() { release(); }

  // Lets the owner go (and the memory with it, unless something else holds it).
  void release();
  std::size_t bytes() const { return bytes_; }

 private:
  friend class ConnectionOutput;
  OutputHold(ConnectionOutput* connection, std::shared_ptr<const void> owner, std::size_t bytes)
      : connection_(connection), owner_(std::move(owner)), bytes_(bytes) {}

  ConnectionOutput* connection_ = nullptr;
  std::shared_ptr<const void> owner_;
  std::size_t bytes_ = 0;
};

// One connection's part of the budget: the answers it holds, its own bound and the listener's.
// Must outlive its holds.
class ConnectionOutput {
 public:
  ConnectionOutput(OutputBudget& budget, std::size_t max_bytes)
      : budget_(budget), max_(max_bytes) {}
  ConnectionOutput(const ConnectionOutput&) = delete;
  ConnectionOutput& operator=(const ConnectionOutput&) = delete;

  // Below its own bound, and the listener has room: the connection may take new work.
  bool takes_new_work() const { return held_ < max_ && budget_.has_room(); }
  // Whether one more handler may start, `answering` others having started and not answered
  // yet: with each answer expected as large as the largest this connection has held (before
  // its first: the listener's recent largest, or an eighth of the bound), theirs and its own
  // still fit its bound. Always while it holds and expects nothing.
  bool room_for_handler(std::size_t answering) const;
  // Whether `response` may be sent: what it keeps alive fits both bounds (each waived while
  // its side holds nothing).
  bool admits(const Response& response) const;
  // Takes over what `response` keeps alive (its body_owner, which is left empty; the body view
  // stays valid while the hold lives). An answer without an owner gives an empty hold.
  OutputHold hold(Response& response);

  std::size_t held() const { return held_; }
  std::size_t largest() const { return largest_; }
  OutputBudget& budget() { return budget_; }

 private:
  friend class OutputHold;
  void release(const void* owner, std::size_t bytes);

  OutputBudget& budget_;
  std::size_t max_;
  std::size_t held_ = 0;
  std::size_t largest_ = 0;  // the largest answer held so far
};

}  // namespace wg::http
