#pragma once
// What keeps the process within what the fleet may spend and may ask of upstream, shared by
// every worker: the month's quota (and this instance's lease of it, handed over across restarts
// in quota.state_file), the circuit breaker, upstream's own hold (Retry-After), and the widget
// ids upstream has confirmed. Thread-safe parts, built on the control thread, which also
// reports them to Redis once a second (report_once). See docs/quota.md and docs/threading.md.

#include <functional>

#include "serving/known_widgets.hpp"
#include "serving/upstream_hold.hpp"
#include "widget_gateway/common/fleet_clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/upstream/circuit_breaker.hpp"

namespace wg::metrics {
struct ScrapeSources;
}

namespace wg::redis {
class Client;
}

namespace wg::process {

class FleetGuards {
 public:
  // `circuit_changed(open)`: the breaker opened or closed (any thread; the first one to see it).
  FleetGuards(FleetClock& clock, const config::Config& config, const KeySpace& keys,
              RandomSource& random, std::function<void(bool open)> circuit_changed);

  quota::QuotaCounter& quota() { return quota_; }
  const quota::QuotaCounter& quota() const { return quota_; }
  upstream::CircuitBreaker& breaker() { return breaker_; }
  serving::UpstreamHold& hold() { return hold_; }
  serving::KnownWidgets& known_widgets() { return known_widgets_; }
  // What is left of upstream's hold; 0 when none. Any thread.
  std::chrono::seconds hold_left() const;

  // Takes over the ledger a stopped instance left in quota.state_file, if any (at start).
  void restore_lease();
  // One report (control thread, once a second): until Redis has answered once, whether its
  // eviction policy could take the quota keys; the fleet's clock; the quota's spending and
  // leases; the widgets upstream confirmed since the last report.
  boost::asio::awaitable<void> report_once(redis::Client& redis);
  // At the end of the drain: the last confirmed widgets, the unspent lease given back, and
  // quota.state_file written.
  boost::asio::awaitable<void> settle(redis::Client& redis);
  // SIGHUP: the new [quota] settings (a change of mode is logged).
  void apply(const config::QuotaConfig& quota);

  // The quota's series of /metrics.
  void describe(metrics::ScrapeSources& sources) const;

 private:
  boost::asio::awaitable<void> release_lease(redis::Client& redis);

  FleetClock& clock_;
  std::string state_file_;  // quota.state_file ("": none)
  quota::QuotaCounter quota_;
  upstream::CircuitBreaker breaker_;
  serving::UpstreamHold hold_;
  serving::KnownWidgets known_widgets_;
  bool policy_checked_ = false;  // control thread only
};

}  // namespace wg::process
