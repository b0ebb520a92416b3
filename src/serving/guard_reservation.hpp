#pragma once
// One count reserved on a widget's guard for one fetch (docs/freshness.md, "The guard"). The
// fetch lock's claim takes it with the lock, so that a burst cannot pass the guard's check
// before any of it is counted. It is kept when upstream answers with data the guard counts
// (a 200, held back or not), and given back otherwise: a paced fetch, a refusal, a failure, a
// negative answer. Whoever holds it last settles it; one that is dropped unsettled (an exit
// that skipped it, an exception) is given back in the background on the worker's executor.
// Threads: the worker's.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

#include "fetch_lock.hpp"

namespace wg::serving {

class GuardReservation {
 public:
  // `lock_key`: the fetch lock of the key fetched (the same hash slot as the guard's keys,
  // which a script's keys must share on a cluster).
  GuardReservation(FetchLock& lock, std::string lock_key, FetchLock::Guard guard,
                   boost::asio::any_io_executor executor);
  GuardReservation(GuardReservation&& other) noexcept;
  GuardReservation& operator=(GuardReservation&&) = delete;
  ~GuardReservation();

  // The fetch counts against the guard: nothing goes back.
  void keep() { guard_.reset(); }
  // Gives the count back, and in the same command releases the fetch lock if it is still held
  // with `token` (none when empty).
  boost::asio::awaitable<void> give_back(const std::string& token = {});

 private:
  FetchLock* lock_;
  std::string lock_key_;
  std::optional<FetchLock::Guard> guard_;  // reserved and not yet settled
  boost::asio::any_io_executor executor_;
};

}  // namespace wg::serving
