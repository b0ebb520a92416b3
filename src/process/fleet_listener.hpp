#pragma once
// What the fleet's channels ask of this process's workers (FleetLinks calls it, the worker pool
// does it).

#include <cstdint>
#include <string>

#include "widget_gateway/common/clock.hpp"

namespace wg::process {

// What a channel asks of the workers; the worker pool does it. Called on the control thread.
class FleetListener {
 public:
  virtual ~FleetListener() = default;
  virtual void erase_everywhere(const std::string& prefix) = 0;  // "" clears
  virtual void drop_older(const std::string& key, WallTime stored_at, WallTime fresh_until) = 0;
  // The subscriber is back after a gap in which purges may have been missed.
  virtual void clear_l1_when_redis_up() = 0;
  virtual void use_redis_primary(const std::string& host, std::uint16_t port) = 0;
};

}  // namespace wg::process
