#pragma once
// quota.state_file: where an instance that stops while Redis is unreachable leaves its lease
// ledgers, so that the next start with the same file reports them under the same name
// instead of leaving them counted as unspent leases. Small blocking file I/O: called at start
// and at the end of shutdown only, never on an io thread while it serves.

#include <optional>
#include <string>

#include "widget_gateway/quota/quota_counter.hpp"

namespace wg::quota {

// Writes `state` atomically (a temporary file renamed over `path`). False when it could not.
bool save_lease_state(const std::string& path, const LeaseState& state);

// Reads the file and removes it, so that no second start takes over the same ledgers. nullopt
// when there is none; a file that cannot be parsed is renamed to "<path>.bad" and logged.
std::optional<LeaseState> take_lease_state(const std::string& path);

// The file's text, and its parser (for tests).
std::string format_lease_state(const LeaseState& state);
std::optional<LeaseState> parse_lease_state(std::string_view text);

}  // namespace wg::quota
