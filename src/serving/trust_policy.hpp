#pragma once
// Whether an upstream answer may replace the adopted copy of its key: the contract's
// last-known-good rule as a pure function (docs/freshness.md, "What takes more than half
// away"). Vendors glitch around their daily refresh (partial data, empty lists, a late job):
// one well-formed answer that takes more than half of a key's data away is held back for
// cache.confirm_after, and the adopted copy goes on being served meanwhile.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "widget_gateway/api/request.hpp"
#include "widget_gateway/api/widget_summary.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::serving {

// What an answer (or a copy) says, as the rule reads it.
struct AnswerShape {
  std::uint16_t status = 200;                // 200, or upstream's 404/400 for an unknown widget
  std::optional<api::WidgetSummary> widget;  // widget data with status 200: its counts
  std::size_t reviews = 0;                   // reviews with status 200: how many
};

// What the answer is judged against.
struct AdoptedBasis {
  // The key's adopted copy (fresh or stale); nullopt when there is none, or when the key's copy
  // is provisional (a held-back answer kept for lack of anything better: not adopted).
  std::optional<AnswerShape> copy;
  // The hold on the key's copy, adopted or provisional, if it carries one.
  std::optional<cache::Hold> hold;
  // For a reviews key without an adopted copy: the widget's adopted widget data (status 200).
  std::optional<api::WidgetSummary> widget_data;
  // The copy (or the widget data) predates a purge of the widget, soft or hard: the first
  // answer after a purge is adopted as it comes.
  bool purged = false;
};

enum class Verdict : std::uint8_t {
  adopt,        // nothing taken away (or nothing to compare with): store it
  confirm,      // taken away again once confirm_after has passed: the change is real, store it
  restore,      // the copy was held, and this answer does not take away: the glitch is over
  hold,         // keep the adopted copy (held, served unconfirmed); the answer is not stored
  provisional,  // no adopted copy to keep: store the answer marked held, never a proof
};
std::string_view to_string(Verdict verdict);
// Whether the answer itself is stored as the key's copy (adopt, confirm, restore).
inline bool adopts(Verdict verdict) {
  return verdict == Verdict::adopt || verdict == Verdict::confirm || verdict == Verdict::restore;
}

// Whether `answer` takes more than half away against `basis` (the table in
// docs/freshness.md). Widget data that contradicts itself always does.
bool takes_more_than_half(api::Endpoint endpoint, const api::ReviewsQuery& query,
                          const AnswerShape& answer, const AdoptedBasis& basis);

// The verdict on `answer` for a key of `endpoint` and `query`, at `now`.
Verdict judge_answer(api::Endpoint endpoint, const api::ReviewsQuery& query,
                     const AnswerShape& answer, const AdoptedBasis& basis, WallTime now,
                     std::chrono::milliseconds confirm_after);

}  // namespace wg::serving
