#pragma once
// One TCP connection to the target before a run, so that an unreachable target fails at once
// (wg-bench exits 3) instead of spending the whole duration counting connect errors.

#include <chrono>
#include <string>

#include "wg-bench/target.hpp"

namespace wg::bench {

// Empty when a connection could be opened within `timeout`, else why not.
std::string connect_error(const Target& target, std::chrono::milliseconds timeout);

}  // namespace wg::bench
