#pragma once
// What windows have shown of each widget's review lists: where a list ends (a window holding
// fewer than 300 reviews) and how far it reaches (a full one), per widget and platform ("*"
// for all platforms). With the widget data's counts, it proves pages empty without an upstream
// call (cache::provably_empty; the windows win where they disagree with the counts), so that
// a walk past the end of a list whose length the counts do not give costs nothing either.
//
// A fact holds while the window that showed it is fresh, and only under the purge generations
// it was seen with: a purge (or a Redis outage, which forgets the generations) starts over.

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "widget_gateway/api/request.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/cache/generations.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::serving {

// Threads: process-wide; one small mutex, never held across I/O, taken on the miss path only
// (a fresh L1 hit never asks).
class ListEnds {
 public:
  explicit ListEnds(const cache::Generations& generations, std::size_t max_lists = 100'000)
      : generations_(generations), max_lists_(max_lists) {}

  // A window of `request`'s list (its widget and type) starting at `start` held `count`
  // elements; it was stored at `stored_at` and stays fresh until `fresh_until`.
  void record(const api::ApiRequest& request, std::uint64_t start, std::size_t count,
              WallTime stored_at, WallTime fresh_until, WallTime now);
  // The same for a window-shaped answer (`window`: limit 300, an aligned skip) of `elements`.
  // A provisional copy (a held-back answer kept for lack of an adopted one) proves nothing.
  void record_window(const api::ApiRequest& window, const cache::Entry& entry, std::size_t elements,
                     WallTime now) {
    if (entry.status == 200 && !(entry.hold && entry.hold->provisional)) {
      record(window, window.query.skip, elements, entry.stored_at, entry.fresh_until, now);
    }
  }
  // What is known of `request`'s list at `now`, and until when it holds; nullopt when nothing
  // is (or the facts are older than a purge, or their windows are no longer fresh).
  struct Seen {
    cache::ListFacts facts;
    WallTime stored_at;  // of the oldest window behind the facts: an answer is as old
    WallTime fresh_until;
  };
  std::optional<Seen> facts(const api::ApiRequest& request, WallTime now) const;

  std::size_t size() const;

 private:
  struct Known {
    cache::ListFacts facts;
    WallTime stored_at;
    WallTime fresh_until;
    std::uint64_t global = 0;
    std::uint64_t widget = 0;
  };
  // Under the generations known now; nullopt when one is not known (not yet read, or
  // forgotten in an outage).
  struct Generation {
    std::uint64_t global;
    std::uint64_t widget;
  };
  std::optional<Generation> generation_of(const std::string& escaped_id) const;
  static std::string list_key(const std::string& escaped_id, const api::ApiRequest& request);

  const cache::Generations& generations_;
  const std::size_t max_lists_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Known> lists_;
};

}  // namespace wg::serving
