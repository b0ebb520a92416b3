#include <boost/test/unit_test.hpp>

#include <memory>
#include <vector>

#include "serving/repeat_asks.hpp"

using wg::cache::Entry;
using wg::serving::RepeatAsks;

BOOST_AUTO_TEST_SUITE(repeat_asks_test)

BOOST_AUTO_TEST_CASE(the_second_ask_of_an_entry_is_told_apart_from_the_first) {
  RepeatAsks asks;
  auto a = std::make_shared<const Entry>();
  auto b = std::make_shared<const Entry>();
  BOOST_TEST(!asks.asked_before(a));
  BOOST_TEST(!asks.asked_before(b));
  BOOST_TEST(asks.asked_before(a));
  BOOST_TEST(asks.asked_before(b));
  // A copy is another entry, with equal contents or not.
  auto copy = std::make_shared<const Entry>(*a);
  BOOST_TEST(!asks.asked_before(copy));
}

BOOST_AUTO_TEST_CASE(it_keeps_no_entry_alive_and_remembers_only_the_latest) {
  RepeatAsks asks;
  std::weak_ptr<const Entry> gone;
  {
    auto entry = std::make_shared<const Entry>();
    gone = entry;
    BOOST_TEST(!asks.asked_before(entry));
  }
  BOOST_TEST(gone.expired());
  // Many entries later the first is forgotten: its next ask is a first one again.
  auto first = std::make_shared<const Entry>();
  BOOST_TEST(!asks.asked_before(first));
  std::vector<std::shared_ptr<const Entry>> others;
  for (int i = 0; i < 100; ++i) {
    others.push_back(std::make_shared<const Entry>());
    asks.asked_before(others.back());
  }
  BOOST_TEST(!asks.asked_before(first));
  BOOST_TEST(asks.asked_before(others.back()));
}

BOOST_AUTO_TEST_SUITE_END()  // repeat_asks_test
