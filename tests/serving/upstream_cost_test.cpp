// The Space-Saving summary of upstream cost per widget: exact while it has room, bounded and
// still finding the heavy widgets when many more distinct ids arrive, and merged across workers
// with honest bounds.
#include <boost/test/unit_test.hpp>

#include <map>
#include <ostream>
#include <string>

#include "serving/upstream_cost.hpp"

namespace wg::serving {
std::ostream& operator<<(std::ostream& out, const WidgetCost& c) {
  return out << c.widget << ":" << c.calls << "(error " << c.error << ")";
}
}  // namespace wg::serving

using wg::serving::merge_top;
using wg::serving::UpstreamCost;
using wg::serving::WidgetCost;

BOOST_AUTO_TEST_SUITE(upstream_cost_test)

BOOST_AUTO_TEST_CASE(exact_while_there_is_room) {
  UpstreamCost cost(4);
  for (int i = 0; i < 3; ++i) cost.count("b");
  cost.count("a");
  cost.count("c");
  cost.count("c");
  const auto top = cost.top();
  BOOST_REQUIRE_EQUAL(top.size(), 3u);
  BOOST_TEST(top[0] == (WidgetCost{"b", 3, 0}));
  BOOST_TEST(top[1] == (WidgetCost{"c", 2, 0}));
  BOOST_TEST(top[2] == (WidgetCost{"a", 1, 0}));
}

BOOST_AUTO_TEST_CASE(memory_is_bounded_and_heavy_widgets_are_kept) {
  UpstreamCost cost(8);
  // 10,000 distinct ids once each, interleaved with two widgets each above total/capacity
  // (the share Space-Saving guarantees to keep).
  std::map<std::string, std::uint64_t> truth;
  for (int i = 0; i < 10000; ++i) {
    const std::string cold = "cold-" + std::to_string(i);
    cost.count(cold);
    ++truth[cold];
    if (i % 2 == 0) {
      cost.count("heavy");
      ++truth["heavy"];
    }
    if (i % 3 == 0) {
      cost.count("warm");
      ++truth["warm"];
    }
  }
  const auto top = cost.top();
  BOOST_TEST(top.size() == 8u);
  BOOST_TEST(top[0].widget == "heavy");
  BOOST_TEST(top[1].widget == "warm");
  for (const WidgetCost& c : top) {
    // The bounds hold for every tracked widget: calls - error <= truth <= calls.
    BOOST_TEST(c.calls >= truth[c.widget]);
    BOOST_TEST(c.calls - c.error <= truth[c.widget]);
  }
}

BOOST_AUTO_TEST_CASE(a_newcomer_inherits_the_least_count_as_its_error) {
  UpstreamCost cost(2);
  cost.count("a");
  cost.count("a");
  cost.count("b");
  cost.count("c");  // replaces b (1 call)
  const auto top = cost.top();
  BOOST_REQUIRE_EQUAL(top.size(), 2u);
  BOOST_TEST(top[0] == (WidgetCost{"a", 2, 0}));
  BOOST_TEST(top[1] == (WidgetCost{"c", 2, 1}));
}

BOOST_AUTO_TEST_CASE(merge_adds_workers_and_cuts_to_n) {
  UpstreamCost w0(4);
  UpstreamCost w1(4);
  for (int i = 0; i < 5; ++i) w0.count("x");
  w0.count("y");
  for (int i = 0; i < 4; ++i) w1.count("y");
  w1.count("z");
  const auto merged = merge_top({w0.top(), w1.top()}, 4, 2);
  BOOST_REQUIRE_EQUAL(merged.size(), 2u);
  BOOST_TEST(merged[0] == (WidgetCost{"x", 5, 0}));
  BOOST_TEST(merged[1] == (WidgetCost{"y", 5, 0}));
}

BOOST_AUTO_TEST_CASE(merge_keeps_bounds_when_a_full_summary_lacks_a_widget) {
  UpstreamCost full(2);
  full.count("a");
  full.count("a");
  full.count("b");
  full.count("c");  // full: a=2, c=2 (error 1); its least count is 2
  UpstreamCost other(2);
  other.count("b");
  const auto merged = merge_top({full.top(), other.top()}, 2, 10);
  std::map<std::string, WidgetCost> by_id;
  for (const auto& c : merged) by_id[c.widget] = c;
  // b: 1 call on `other`, and up to 2 uncounted on `full` (it really had 1 there).
  BOOST_TEST(by_id["b"].calls == 3u);
  BOOST_TEST(by_id["b"].calls - by_id["b"].error <= 2u);
  BOOST_TEST(by_id["b"].calls >= 2u);
  BOOST_TEST(by_id["a"] == (WidgetCost{"a", 2, 0}));
}

BOOST_AUTO_TEST_SUITE_END()  // upstream_cost_test
