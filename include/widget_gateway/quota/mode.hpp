#pragma once
// The quota's modes: normal, economy (spend sparingly: stale copies are served rather than
// refreshed) and exhausted (no upstream request at all until the reset).

namespace wg::quota {

enum class Mode { normal, economy, exhausted };

}  // namespace wg::quota
