#pragma once
// The stub's data: a deterministic set of widgets and reviews derived from (seed, widget index).
//
// Everything cheap (ids, linked platforms, per-platform review counts) is planned eagerly at
// construction; the expensive part (the widget body and every review rendered to JSON) is built
// lazily on first access and cached under a byte budget. Because generation is deterministic, an
// evicted widget renders to the same bytes again.
//
// Choices where the upstream spec is silent:
// - Reviews of a widget have one stable order: newest first. Reviews without a `date` keep the
//   position their (unpublished) date would give them.
// - `totalReviewAmount` counts every review; `reviewAmount[p]` counts reviews of platform p and
//   lists every linked platform (a linked platform may have 0 reviews); `reviewStars` counts only
//   reviews that carry a `rating`, so its sum may be below `totalReviewAmount`.
// - `totalRating` and `<code>Rating` are the mean of the rated reviews (of that platform), rounded
//   to one decimal and always written with one decimal; 0.0 when nothing is rated.
// - Fixed shapes: widget 0 has exactly 700 reviews over at least 3 platforms, widget 1 has no
//   reviews and no sources, widget 2 has exactly 12 reviews, all googleMap (its only source).

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wg::stub {

inline constexpr std::size_t kPlatformCount = 9;
inline constexpr std::array<std::string_view, kPlatformCount> kPlatforms = {
    "doubleGis",   "yaSprav", "avito",     "zoon",      "vkontakte",
    "prodoctorov", "otzovik", "googleMap", "yaBusiness"};

// Index of a platform code in kPlatforms; nullopt for anything else (case-sensitive).
std::optional<std::size_t> platform_index(std::string_view code);

// What is known about a widget without rendering it.
struct WidgetPlan {
  std::string id;  // 24 lowercase hex characters
  // Linked platforms (indices into kPlatforms) in source order, with their review counts.
  std::vector<std::pair<std::uint8_t, std::uint32_t>> platforms;
  std::uint32_t total_reviews = 0;  // sum of the counts above
};

// Plans widget `index` of the data set generated from `seed`. Pure.
WidgetPlan plan_widget(std::uint64_t seed, std::size_t index);

// A widget rendered to JSON: its body and each review's element text, in the stable order.
// Immutable once built; shared between requests.
class RenderedWidget {
 public:
  RenderedWidget(std::string body, std::vector<std::string> reviews,
                 std::vector<std::uint8_t> review_platforms);

  const std::string& body() const { return body_; }

  // Number of reviews, of all platforms or of one (an index into kPlatforms).
  std::size_t review_count(std::optional<std::size_t> platform = std::nullopt) const;
  // Element text of review `i` of the full order.
  std::string_view review(std::size_t i) const { return reviews_[i]; }

  // The JSON array of reviews [skip, skip + limit) of the full order, or of the order filtered
  // to one platform. The bytes are exactly the element texts joined by "," inside "[...]".
  std::string page(std::size_t skip, std::size_t limit,
                   std::optional<std::size_t> platform = std::nullopt) const;

  // Approximate heap bytes held, for the cache budget.
  std::size_t bytes() const { return bytes_; }

 private:
  std::string body_;
  std::vector<std::string> reviews_;
  std::array<std::vector<std::uint32_t>, kPlatformCount> by_platform_;
  std::size_t bytes_ = 0;
};

// Renders widget `index` (planned as `plan`) of the data set generated from `seed`. Pure.
// `day`: the vendor's data day (Dataset::set_day): every date in the data (review dates, the
// widget's and its sources' updatedAt) moves that many days on, so each day's bytes differ while
// the counts stay.
RenderedWidget render_widget(std::uint64_t seed, std::size_t index, const WidgetPlan& plan,
                             std::int64_t day = 0);

class Dataset {
 public:
  static constexpr std::size_t kDefaultCacheBytes = std::size_t{512} << 20;

  // Plans `widget_count` widgets (cheap: no rendering). `cache_bytes` bounds the rendered
  // widgets kept in memory (the most recently rendered one is always kept).
  Dataset(std::uint64_t seed, std::size_t widget_count,
          std::size_t cache_bytes = kDefaultCacheBytes);

  std::uint64_t seed() const { return seed_; }
  std::size_t size() const { return plans_.size(); }
  const WidgetPlan& plan(std::size_t index) const { return plans_[index]; }
  const std::string& id(std::size_t index) const { return plans_[index].id; }
  std::optional<std::size_t> find(std::string_view id) const;

  // The rendered widget, built on first access. Thread-safe; rendering happens outside the lock
  // (two threads may render the same widget at once; both get identical bytes).
  std::shared_ptr<const RenderedWidget> rendered(std::size_t index) const;

  // The vendor's daily refresh: from now on every widget renders as of data day `day` (0 at
  // start). Thread-safe; what was rendered before is dropped.
  void set_day(std::int64_t day) const;
  std::int64_t day() const { return day_.load(); }

  // Renders widgets in index order while the cache has room; how many it rendered. For
  // benchmarks: an upstream's own work is not the system under test's, and rendering on first
  // access put it on the load generator's CPU, in the middle of the measured runs.
  std::size_t render_all() const;

  // JSON array of the first `limit` widgets (all when nullopt), each
  // {"id":...,"totalReviewAmount":...,"reviewAmount":{...}}.
  std::string listing(std::optional<std::size_t> limit = std::nullopt) const;

 private:
  std::uint64_t seed_;
  std::vector<WidgetPlan> plans_;
  std::unordered_map<std::string_view, std::size_t> index_by_id_;  // views into plans_

  mutable std::atomic<std::int64_t> day_{0};
  std::size_t cache_budget_;
  mutable std::mutex cache_mutex_;
  mutable std::vector<std::shared_ptr<const RenderedWidget>> cache_;  // by widget index
  mutable std::deque<std::size_t> cache_order_;  // insertion order, for eviction
  mutable std::size_t cache_bytes_ = 0;
};

}  // namespace wg::stub
