#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "serving/demand_counter.hpp"

using namespace wg::serving;

namespace {

std::map<std::string, std::uint64_t> as_map(const DemandCounts& counts) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& [key, requests] : counts.keys) out[key] += requests;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(demand_counter_test)

BOOST_AUTO_TEST_CASE(counts_each_key_and_starts_over_after_a_hand_over) {
  DemandCounter counter;
  counter.note("wg:{a}:w");
  counter.note("wg:{a}:w");
  counter.note("wg:{a}:r:*:20:0");
  DemandCounts first = counter.take();
  BOOST_TEST((as_map(first) ==
              std::map<std::string, std::uint64_t>{{"wg:{a}:w", 2}, {"wg:{a}:r:*:20:0", 1}}));
  BOOST_TEST(first.dropped == 0u);
  BOOST_TEST(counter.keys() == 0u);
  BOOST_TEST(counter.take().keys.empty());
  counter.note("wg:{a}:w");
  BOOST_TEST((as_map(counter.take()) == std::map<std::string, std::uint64_t>{{"wg:{a}:w", 1}}));
}

BOOST_AUTO_TEST_CASE(past_its_bound_new_keys_are_dropped_and_counted_old_ones_still_count) {
  DemandCounter counter(2);
  counter.note("k1");
  counter.note("k2");
  counter.note("k3");
  counter.note("k3");
  counter.note("k1");
  DemandCounts counts = counter.take();
  BOOST_TEST((as_map(counts) == std::map<std::string, std::uint64_t>{{"k1", 2}, {"k2", 1}}));
  BOOST_TEST(counts.dropped == 2u);
  // The bound is per hand-over: the next interval has room again.
  counter.note("k3");
  BOOST_TEST((as_map(counter.take()) == std::map<std::string, std::uint64_t>{{"k3", 1}}));
}

BOOST_AUTO_TEST_CASE(off_counts_nothing) {
  DemandCounter counter;
  counter.set_enabled(false);
  counter.note("k1");
  BOOST_TEST(counter.take().keys.empty());
  counter.set_enabled(true);
  counter.note("k1");
  BOOST_TEST(counter.take().keys.size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_merge_adds_up_workers_within_its_bound) {
  DemandCounts merged;
  merge_into(merged, {{{"k1", 2}, {"k2", 1}}, 5}, 3);
  merge_into(merged, {{{"k2", 4}, {"k3", 1}, {"k4", 7}}, 1}, 3);
  BOOST_TEST(
      (as_map(merged) == std::map<std::string, std::uint64_t>{{"k1", 2}, {"k2", 5}, {"k3", 1}}));
  BOOST_TEST(merged.dropped == 5u + 1u + 7u);
  // A key already merged still counts once the bound is reached.
  merge_into(merged, {{{"k1", 1}}, 0}, 3);
  BOOST_TEST(as_map(merged)["k1"] == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
