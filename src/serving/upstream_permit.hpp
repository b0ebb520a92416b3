#pragma once
// Everything one upstream request holds before it may go out, in one object: the guard's count
// for the widget (reserved with the fetch lock, handed in), the worker's in-flight slot, the
// unknown-id reservation (for an id not known to be valid) and the quota grant, taken in that
// order (a grant is the last thing before sending, so a refusal never leaves one counted and
// unsent). What was taken and not used goes back however the request ends: a guard count or
// an unknown-id reservation upstream's answer did not keep, a grant whose request was never
// sent, everything on a refusal.
// Threads: the worker's, as its fetcher.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <system_error>
#include <variant>

#include "guard_reservation.hpp"
#include "in_flight_limit.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"

namespace wg::serving {

// Why a permit was not given: what the client is told and the wait it carries; `withheld` is
// the reason counted in wg_upstream_withheld_total (none for a spent quota, which is not
// withheld but refused).
struct PermitRefusal {
  std::error_code error;
  std::chrono::seconds retry_after{0};
  std::optional<metrics::Withheld> withheld;
  bool grant_refused = false;  // the quota grant was asked for, and refused
};

class UpstreamPermit {
 public:
  struct Sources {
    InFlightLimit& slots;
    quota::QuotaCounter& quota;
    redis::Client& redis;
    Clock& clock;
    boost::asio::any_io_executor executor;  // the worker's: a late refund runs there
  };
  using Taken = std::variant<UpstreamPermit, PermitRefusal>;

  // Takes a slot (waiting up to `queue_wait`), then for an unknown id a reservation, then a
  // grant; gives back what it took, `guard` included, when a later one is refused.
  static boost::asio::awaitable<Taken> take(Sources sources, std::chrono::milliseconds queue_wait,
                                            bool widget_known,
                                            std::optional<GuardReservation> guard);

  UpstreamPermit(UpstreamPermit&& other) noexcept;
  UpstreamPermit& operator=(UpstreamPermit&&) = delete;
  // A grant never marked sent goes back to the lease; a reservation not settled is given back
  // in the background (the settle() path gives it back before the answer instead).
  ~UpstreamPermit();

  // The request is done (answered or failed): the slot goes back. `nothing_sent`: it was
  // rejected before any byte left (a refused connect), so the grant goes back too.
  void finished(bool nothing_sent);
  // What upstream's answer keeps of the reservations.
  struct Kept {
    bool unknown_id = false;   // upstream said it does not know the id
    bool guard_count = false;  // upstream answered with data the guard counts
  };
  // Upstream's answer settles the reservations: what it does not keep goes back now, before
  // the client is answered (so the client's next new widget finds the room back, and the
  // widget's next fetch finds its count).
  boost::asio::awaitable<void> settle(Kept kept);

 private:
  UpstreamPermit(Sources sources, std::optional<GuardReservation> guard)
      : sources_(sources), guard_(std::move(guard)) {}
  boost::asio::awaitable<void> settle_unknown(bool keep);

  Sources sources_;
  std::optional<GuardReservation> guard_;  // reserved and not yet settled
  std::optional<InFlightLimit::Slot> slot_;
  std::optional<quota::QuotaPeriod> unknown_;        // reserved and not yet settled
  std::optional<quota::QuotaCounter::Grant> grant_;  // granted and not yet marked sent
};

}  // namespace wg::serving
