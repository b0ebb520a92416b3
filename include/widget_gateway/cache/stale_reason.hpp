#pragma once
// Why a copy past its freshness is served. Cache-Status' detail (RFC 9211), the
// wg_stale_served_total label and the status page all spell a reason from here.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wg::cache {

enum class StaleReason : std::uint8_t {
  none,  // the copy is fresh
  while_revalidate,
  if_error,
  quota_exhausted,
  quota_economy,
  widget_paced,  // the per-widget guard paces upstream requests for the widget
};
inline constexpr std::size_t kStaleReasons = 6;  // none included

inline constexpr std::string_view to_string(StaleReason reason) {
  switch (reason) {
    case StaleReason::none:
      return "";
    case StaleReason::while_revalidate:
      return "stale-while-revalidate";
    case StaleReason::if_error:
      return "stale-if-error";
    case StaleReason::quota_exhausted:
      return "quota-exhausted";
    case StaleReason::quota_economy:
      return "quota-economy";
    case StaleReason::widget_paced:
      return "widget-paced";
  }
  return "";
}

}  // namespace wg::cache
