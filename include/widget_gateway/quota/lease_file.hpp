#pragma once
// quota.state_file: where an instance leaves its lease ledgers when it stops, so that the next
// start with the same file reports them under the same name (when this stop could not reach
// Redis, instead of leaving them counted as unspent leases), and the fleet's spending as it
// last saw it (its high-water mark, should Redis lose the month's counter). Small blocking file
// I/O: called at start and at the end of shutdown only, never on an io thread while it serves.

#include <optional>
#include <string>

#include "widget_gateway/quota/ledger.hpp"

namespace wg::quota {

// Writes `state` atomically and durably, readable by the owner only (0600): a new file
// "<path>.tmp" created with O_EXCL in the same directory, synced, renamed over `path`, and the
// directory synced. Nothing found at the temporary name is written through (a symlink or a
// hard link placed there is removed, never opened), and a `path` that is a symlink or not a
// regular file is refused. False (and logged) when it could not.
bool save_lease_state(const std::string& path, const LeaseState& state);

// Reads the file and removes it, so that no second start takes over the same ledgers. nullopt
// when there is none; a file that cannot be parsed, or is no regular file (a symlink is not
// followed), is renamed to "<path>.bad" and logged.
std::optional<LeaseState> take_lease_state(const std::string& path);

// The file's text, and its parser (for tests).
std::string format_lease_state(const LeaseState& state);
std::optional<LeaseState> parse_lease_state(std::string_view text);

}  // namespace wg::quota
