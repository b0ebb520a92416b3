#pragma once
// The monthly upstream budget, shared by every gateway instance through Redis, spent from
// leases. An instance reserves a small lease (sized by its recent burn, bounded by what is
// left) with one atomic script that also counts the lease in the month's counter; it then
// spends from the lease without a Redis round trip, reports its spending about once a second,
// and gives back what it did not spend (on shutdown, when idle, at the month's end). So the
// counter is raised before any request it covers is sent, and the fleet can never spend more
// than the limit, Redis outages included: an instance that cannot reach Redis spends at most
// the rest of its lease. docs/quota.md states the guarantees and the tests that show them.
//
// Every figure an instance sends is cumulative (granted, spent, returned for the month), so a
// script that timed out but ran, or ran twice, changes nothing when the next one arrives.
//
// Each instance also sends the fleet's spending as it last saw it (its high-water mark), so
// that a counter Redis lost (deleted, or a restart without persistence) comes back at least
// that high, spends of instances that stopped meanwhile included.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/quota/burn_rate.hpp"
#include "widget_gateway/quota/ledger.hpp"
#include "widget_gateway/quota/mode.hpp"
#include "widget_gateway/quota/quota_period.hpp"
#include "widget_gateway/quota/snapshot.hpp"

namespace wg::redis {
class Client;
}

namespace wg::quota {

// Process-wide and thread-safe (one small mutex, never held across I/O): every io worker
// spends through it, with its own Redis connection when a lease must be reserved.
class QuotaCounter {
 public:
  // `instance` names this process's ledger in Redis; unique in the fleet. `keys` names the
  // month's keys (the fleet's redis.key_prefix).
  QuotaCounter(Clock& clock, const config::QuotaConfig& config, std::string instance,
               KeySpace keys = KeySpace());

  enum class Verdict {
    allowed,      // one upstream request may be sent, and is counted
    exhausted,    // the month's limit (or the unknown-id budget) is reached
    unavailable,  // Redis cannot be asked and nothing is left of the lease: nothing sent
  };
  struct Grant {
    Verdict verdict = Verdict::unavailable;
    QuotaPeriod period;
    bool allowed() const { return verdict == Verdict::allowed; }
  };
  // Counts one upstream request if the lease (or a new one) covers it. With an unlimited
  // quota, a request is allowed and counted even when Redis cannot be asked.
  boost::asio::awaitable<Grant> acquire(redis::Client& redis);
  // An allowed request of which no byte was sent (the upstream client says so): its charge
  // goes back to the lease, to be spent again, and never counts.
  void give_back(const Grant& grant);

  // The unknown-id budget: one lookup of an id not known to be valid is reserved before it
  // is sent (refused past the cap, or when Redis cannot be asked), and refunded unless
  // upstream answered that it does not know the id (at once: the budget's room is its cap
  // less the lookups in flight).
  boost::asio::awaitable<Grant> acquire_unknown(redis::Client& redis);
  boost::asio::awaitable<void> refund_unknown(redis::Client& redis, QuotaPeriod period);

  // Reports spending, returns leases idle for long or of a past month, refreshes the fleet's
  // figures, and deletes the keys of months long past (quota_period.hpp). Called about once a
  // second and when a Redis connection comes back.
  boost::asio::awaitable<void> report(redis::Client& redis);
  // Shutdown: gives back every unspent lease. False when Redis did not take the report: the
  // caller keeps lease_state() (quota.state_file). No acquire() may follow.
  boost::asio::awaitable<bool> release(redis::Client& redis);

  LeaseState lease_state() const;
  // The newest month whose keys this process deleted ("" before its first report did).
  std::string months_deleted_through() const;
  // Takes over a stopped instance's ledgers, name and high-water marks (before any acquire()).
  // Months no longer reported (quota_reports_until) are left out.
  void restore(const LeaseState& state);
  const std::string& instance() const { return instance_; }

  Snapshot snapshot() const;
  void set_config(const config::QuotaConfig& config);  // SIGHUP

 private:
  struct Month {
    QuotaPeriod period;
    Ledger ledger;
    // `spent` and `unsent` as of the last report Redis took.
    std::uint64_t reported_spent = 0;
    std::uint64_t reported_unsent = 0;
    // The rest of the fleet's requests sent, the highest figure any reply implied: with our
    // own, the high-water mark each script run gets.
    std::uint64_t others_sent = 0;
    // The fleet as of that report.
    std::uint64_t charged = 0;
    std::uint64_t leased = 0;
    std::uint64_t unknown_used = 0;
    // Recent burn, for the lease size: spends in this and the previous window.
    SteadyTime window_start{};
    std::uint64_t window_spends = 0;
    std::uint64_t previous_window_spends = 0;
    SteadyTime last_spend{};
    std::optional<SteadyTime> refused_at;  // when Redis last said the month has nothing left
  };
  struct Reply;

  QuotaPeriod current_period() const;
  Month& month_locked(const QuotaPeriod& period);
  static bool unreported_locked(const Month& month);
  void note_spend_locked(Month& month);
  std::uint64_t lease_size_locked(const Month& month) const;
  // One script run for `period`: reports the ledger, gives back `give_back` more, reserves
  // `want`. nullopt when Redis did not answer usefully.
  boost::asio::awaitable<std::optional<Reply>> exchange(redis::Client& redis, QuotaPeriod period,
                                                        std::uint64_t give_back,
                                                        std::uint64_t want);
  void adopt_locked(Month& month, const Reply& reply, const Ledger& sent);
  // Deletes the keys of the months before `newest_deletable_period`, once per such month.
  boost::asio::awaitable<void> delete_past_months(redis::Client& redis);
  Snapshot snapshot_locked() const;

  Clock& clock_;
  std::string instance_;
  const KeySpace keys_;
  mutable std::mutex mutex_;
  config::QuotaConfig config_;
  std::map<std::string, Month> months_;  // by "YYYY-MM"
  std::string deleted_through_;          // the newest month whose keys this process deleted
  // The fleet's `used`, read at each report Redis answered, for the month-end projection.
  BurnRate burn_;
  Mode last_mode_ = Mode::normal;  // for the quota_mode event on every change

  struct ModeChange {
    Mode from;
    Mode to;
  };
  std::optional<ModeChange> note_mode_locked();
  void log_mode_change(const std::optional<ModeChange>& change) const;
};

}  // namespace wg::quota
