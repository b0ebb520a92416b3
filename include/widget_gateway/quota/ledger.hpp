#pragma once
// One instance's lease of the month, as cumulative counts, and what it leaves behind when it
// stops (quota.state_file, lease_file.hpp).

#include <cstdint>
#include <map>
#include <string>

namespace wg::quota {

// One month of one instance's lease, as cumulative counts.
struct Ledger {
  std::uint64_t granted = 0;   // reserved for this instance (the highest figure Redis sent)
  std::uint64_t spent = 0;     // requests charged to it, each right before it was sent
  std::uint64_t returned = 0;  // given back unspent
  // Charged, but no byte of the request left (a failed connect): back in the lease, as if the
  // charge had not happened. Counted apart so that every figure stays cumulative.
  std::uint64_t unsent = 0;
  std::uint64_t sent() const { return spent > unsent ? spent - unsent : 0; }
  // What is still reserved; sent + returned may exceed granted (an unlimited month spends
  // without a lease), and a state file may hold any counts, so nothing here may wrap.
  std::uint64_t left() const {
    const std::uint64_t s = sent();
    if (s >= granted || returned >= granted - s) return 0;
    return granted - s - returned;
  }
  friend bool operator==(const Ledger&, const Ledger&) = default;
};

// What an instance leaves behind when it stops (quota.state_file): its ledgers, for the next
// start to report when this stop could not, and what it knew of the fleet.
struct LeaseState {
  std::string instance;
  std::map<std::string, Ledger> ledgers;  // by month "YYYY-MM"
  // By month: the fleet's requests sent, as last seen (the high-water mark).
  std::map<std::string, std::uint64_t> seen;
  friend bool operator==(const LeaseState&, const LeaseState&) = default;
};

}  // namespace wg::quota
