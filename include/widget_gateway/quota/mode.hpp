#pragma once
// The quota's modes: normal, economy (spend sparingly: stale copies are served rather than
// refreshed) and exhausted (no upstream request at all until the reset).

#include <cstdint>
#include <string_view>

namespace wg::quota {

enum class Mode : std::uint8_t { normal, economy, exhausted };

// The mode's name, as /admin/quota, /readyz, logs and wg_quota_mode{mode} spell it.
constexpr std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::normal:
      return "normal";
    case Mode::economy:
      return "economy";
    case Mode::exhausted:
      return "exhausted";
  }
  return "normal";
}

}  // namespace wg::quota
