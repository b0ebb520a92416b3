#pragma once
// What a SIGHUP changes: the running configuration after a reload (which keys apply now and
// which wait for a restart), and the per-client limiters every worker shares, kept across
// reloads that leave their shape alone.

#include <memory>
#include <utility>

#include "frontend/public_handler.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::process {

// What the process runs with once a reload built `fresh`: its reloadable parts, and the start-up
// values of what is bound to sockets, pools or threads made at start ([server], [upstream],
// [redis], [tracing], admin.listen, log.access_log), which wait for a restart. TLS certificate
// files are an exception: `tls_files_read` says the reload read them (renewals keep the
// listener); so is server.public_readyz_detail, a setting of the public handler that each
// worker swaps.
config::Config running_after_reload(const config::Config& started, const config::Config& fresh,
                                    bool tls_files_read);

// One per-client limiter every worker shares; kept across reloads that leave its shape alone,
// so a reload does not refill every client's bucket.
class SharedLimiter {
 public:
  std::shared_ptr<client_policy::RateLimiter> for_shape(double rate, std::uint32_t burst);

 private:
  std::pair<double, std::uint32_t> shape_{0, 0};
  std::shared_ptr<client_policy::RateLimiter> limiter_;
};

// The limiters of [access] (misses per IP, new ids per IP). The control thread and the reload
// thread use them one after the other, never together.
struct SharedLimiters {
  SharedLimiter misses;
  SharedLimiter unknown_ids;
  frontend::ClientLimiters for_config(const config::Config& config);
};

}  // namespace wg::process
