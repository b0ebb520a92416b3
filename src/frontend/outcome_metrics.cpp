#include "outcome_metrics.hpp"

namespace wg::frontend {

using serving::Outcome;

metrics::CacheResult cache_result_of(const serving::Served& served) {
  using Detail = Outcome::Detail;
  if (!served.ok()) return metrics::CacheResult::none;
  switch (served.outcome.detail) {
    case Detail::stale_while_revalidate:
    case Detail::stale_if_error:
    case Detail::quota_exhausted:
    case Detail::quota_economy:
    case Detail::widget_paced:
      return metrics::CacheResult::stale;
    case Detail::local:
      return metrics::CacheResult::local;
    case Detail::unconfirmed:
      return metrics::CacheResult::unconfirmed;
    case Detail::empty_on_error:
      return metrics::CacheResult::empty;
    case Detail::derived:
      if (served.outcome.source == Outcome::Source::cache) return metrics::CacheResult::derived;
      break;
    case Detail::none:
      break;
  }
  switch (served.outcome.source) {
    case Outcome::Source::cache:
      return metrics::CacheResult::hit;
    case Outcome::Source::upstream:
      return metrics::CacheResult::miss;
    case Outcome::Source::collapsed:
      return metrics::CacheResult::collapsed;
  }
  return metrics::CacheResult::none;
}

}  // namespace wg::frontend
