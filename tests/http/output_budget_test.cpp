// The output budget's accounting alone: what answers keep alive, each owner once per listener
// and each answer in full per connection, the bounds with their one-answer allowance, and the
// wake-up of connections waiting for room.

#include <boost/test/unit_test.hpp>
#include <memory>
#include <string>
#include <vector>

#include "http/output_budget.hpp"

using wg::http::ConnectionOutput;
using wg::http::kept_alive_bytes;
using wg::http::OutputBudget;
using wg::http::OutputHold;
using wg::http::Response;
using wg::http::ServerStats;

namespace {

constexpr auto kOneThread = OutputBudget::Access::owner_thread;

// An answer whose body is part of a larger owner (a cache entry with other codings).
Response entry_answer(const std::shared_ptr<const std::string>& entry, std::size_t entry_bytes) {
  Response response;
  response.body = *entry;
  response.body_owner = entry;
  response.owner_bytes = entry_bytes;
  return response;
}

Response own_answer(std::size_t size) {
  Response response;
  response.set_body(std::string(size, 'x'));
  return response;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(output_budget_test)

BOOST_AUTO_TEST_CASE(an_answer_keeps_alive_its_owner) {
  auto entry = std::make_shared<const std::string>(1000, 'e');
  BOOST_TEST(kept_alive_bytes(entry_answer(entry, 3000)) == 3000u);
  BOOST_TEST(kept_alive_bytes(own_answer(700)) == 700u);
  Response static_body;
  static_body.body = "ok";  // no owner: nothing of its own is kept alive
  BOOST_TEST(kept_alive_bytes(static_body) == 0u);
}

BOOST_AUTO_TEST_CASE(a_hold_counts_until_released_and_owns_the_body) {
  ServerStats stats;
  OutputBudget budget(1 << 20, stats, kOneThread);
  ConnectionOutput connection(budget, 1 << 20);
  std::weak_ptr<const void> watched;
  {
    Response response = own_answer(5000);
    watched = response.body_owner;
    OutputHold hold = connection.hold(response);
    BOOST_TEST(!response.body_owner);  // taken over by the hold
    BOOST_TEST(!watched.expired());
    BOOST_TEST(hold.bytes() == 5000u);
    BOOST_TEST(connection.held() == 5000u);
    BOOST_TEST(stats.output_pending_bytes.load() == 5000u);
    OutputHold moved = std::move(hold);
    BOOST_TEST(connection.held() == 5000u);
  }
  BOOST_TEST(watched.expired());  // released with the hold
  BOOST_TEST(connection.held() == 0u);
  BOOST_TEST(stats.output_pending_bytes.load() == 0u);
}

BOOST_AUTO_TEST_CASE(an_owner_held_by_many_answers_counts_once_on_the_listener) {
  ServerStats stats;
  OutputBudget budget(1 << 20, stats, kOneThread);
  ConnectionOutput a(budget, 1 << 20), b(budget, 1 << 20);
  auto entry = std::make_shared<const std::string>(1000, 'e');
  Response first = entry_answer(entry, 4000), second = entry_answer(entry, 4000);
  OutputHold one = a.hold(first);
  OutputHold two = b.hold(second);
  BOOST_TEST(budget.pending() == 4000u);  // in memory once
  BOOST_TEST(a.held() == 4000u);          // each connection counts its answer in full
  BOOST_TEST(b.held() == 4000u);
  // An entry that grew (a coding added on demand) counts at its new size.
  Response grown = entry_answer(entry, 6000);
  OutputHold three = a.hold(grown);
  BOOST_TEST(budget.pending() == 6000u);
  one.release();
  two.release();
  BOOST_TEST(budget.pending() == 6000u);
  three.release();
  BOOST_TEST(budget.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(the_connection_bound_allows_one_answer_over_it) {
  ServerStats stats;
  OutputBudget budget(1 << 20, stats, kOneThread);
  ConnectionOutput connection(budget, 10000);
  Response big = own_answer(25000);
  BOOST_TEST(connection.admits(big));  // holds nothing yet: one answer always goes
  OutputHold held = connection.hold(big);
  BOOST_TEST(!connection.takes_new_work());
  BOOST_TEST(!connection.admits(own_answer(1)));
  held.release();
  BOOST_TEST(connection.takes_new_work());

  Response six = own_answer(6000);
  OutputHold small = connection.hold(six);
  BOOST_TEST(connection.admits(own_answer(4000)));   // 10,000: at the bound
  BOOST_TEST(!connection.admits(own_answer(4001)));  // past it
  Response no_owner;
  no_owner.body = "static";
  BOOST_TEST(connection.admits(no_owner));  // keeps nothing alive
}

BOOST_AUTO_TEST_CASE(the_listener_bound_holds_for_every_connection) {
  ServerStats stats;
  OutputBudget budget(10000, stats, kOneThread);
  ConnectionOutput a(budget, 1 << 20), b(budget, 1 << 20);
  BOOST_TEST(b.takes_new_work());  // nothing held
  Response first = own_answer(4000);
  OutputHold first_hold = a.hold(first);
  BOOST_TEST(b.takes_new_work());  // another answer like it fits: 8,000
  Response second = own_answer(4000);
  OutputHold second_hold = a.hold(second);
  BOOST_TEST(!budget.has_room());          // a third would not: 12,000
  BOOST_TEST(!b.takes_new_work());         // b holds nothing, yet takes no new work
  BOOST_TEST(b.admits(own_answer(2000)));  // an answer already made that fits is sent
  BOOST_TEST(!b.admits(own_answer(2001)));
  // An answer of an owner already held adds nothing.
  auto entry = std::make_shared<const std::string>(100, 'e');
  Response shared_first = entry_answer(entry, 2000);
  OutputHold shared_hold = a.hold(shared_first);
  BOOST_TEST(budget.pending() == 10000u);
  BOOST_TEST(b.admits(entry_answer(entry, 2000)));
  BOOST_TEST(!b.admits(entry_answer(entry, 2001)));
  first_hold.release();
  second_hold.release();
  shared_hold.release();
  BOOST_TEST(budget.has_room());
  // An empty listener admits an answer larger than its whole bound: it must be servable.
  BOOST_TEST(b.admits(own_answer(50000)));
}

BOOST_AUTO_TEST_CASE(handlers_start_while_their_expected_answers_fit) {
  ServerStats stats;
  OutputBudget budget(1 << 30, stats, kOneThread);
  ConnectionOutput connection(budget, 80000);
  // Nothing known anywhere: an eighth of the bound each (10,000), so eight at once.
  BOOST_TEST(connection.room_for_handler(0));
  BOOST_TEST(connection.room_for_handler(7));
  BOOST_TEST(!connection.room_for_handler(8));
  // The listener has held answers of 20,000 lately: four at once.
  ConnectionOutput other(budget, 1 << 30);
  Response seen = own_answer(20000);
  OutputHold seen_hold = other.hold(seen);
  BOOST_TEST(connection.room_for_handler(3));
  BOOST_TEST(!connection.room_for_handler(4));
  // From its own first answer on, the connection expects its own largest (30,000).
  Response mine = own_answer(30000);
  OutputHold mine_hold = connection.hold(mine);
  BOOST_TEST(connection.largest() == 30000u);
  BOOST_TEST(connection.room_for_handler(0));   // 30,000 held + 30,000 expected
  BOOST_TEST(!connection.room_for_handler(1));  // + 60,000 expected: over 80,000
  mine_hold.release();
  BOOST_TEST(connection.room_for_handler(0));  // holds and expects nothing
  BOOST_TEST(connection.room_for_handler(1));
  BOOST_TEST(!connection.room_for_handler(2));
}

BOOST_AUTO_TEST_CASE(the_listeners_recent_largest_forgets_one_huge_answer) {
  ServerStats stats;
  OutputBudget budget(1 << 30, stats, kOneThread);
  ConnectionOutput connection(budget, 1 << 30);
  Response huge = own_answer(1 << 20);
  connection.hold(huge).release();
  BOOST_TEST(budget.recent_largest() == std::size_t{1} << 20);
  for (int i = 0; i < 100; ++i) {
    Response small = own_answer(1000);
    connection.hold(small).release();
  }
  BOOST_TEST(budget.recent_largest() < std::size_t{1} << 16);
  BOOST_TEST(budget.recent_largest() >= 1000u);
}

BOOST_AUTO_TEST_CASE(waiters_are_woken_in_turn_as_room_comes) {
  ServerStats stats;
  OutputBudget budget(100000, stats, kOneThread);
  ConnectionOutput connection(budget, 1 << 30);
  std::vector<Response> answers;
  for (int i = 0; i < 3; ++i) answers.push_back(own_answer(30000));
  std::vector<OutputHold> held;
  for (auto& answer : answers) held.push_back(connection.hold(answer));
  BOOST_TEST(!budget.has_room());  // 90,000 held: another 30,000 would not fit

  std::string woken;
  const auto a = budget.on_room([&] { woken += 'a'; });
  budget.on_room([&] { woken += 'b'; });
  budget.on_room([&] { woken += 'c'; });
  const auto d = budget.on_room([&] { woken += 'd'; });
  budget.forget(d);
  BOOST_TEST(woken == "");
  held[0].release();  // room for one answer like the others: the first waiter only
  BOOST_TEST(woken == "a");
  held[1].release();  // room for two: the next two, in order
  BOOST_TEST(woken == "abc");

  // One that must wait again keeps its place ahead of those who came after it.
  Response big = own_answer(60000);
  OutputHold big_hold = connection.hold(big);
  BOOST_TEST(!budget.has_room());
  budget.on_room([&] { woken += 'e'; });
  budget.on_room([&] { woken += 'A'; }, a);
  big_hold.release();  // 30,000 held, room for one answer like the last one (60,000)
  BOOST_TEST(woken == "abcA");
  // A newcomer finds room, but the one waiting ahead of it goes first.
  budget.on_room([&] { woken += 'f'; });
  BOOST_TEST(woken == "abcAe");
  held[2].release();
  BOOST_TEST(woken == "abcAef");
}

BOOST_AUTO_TEST_CASE(counts_are_kept_for_metrics) {
  ServerStats stats;
  OutputBudget budget(10000, stats, OutputBudget::Access::shared);
  budget.count_refused();
  budget.count_refused();
  budget.count_paused();
  budget.count_slow_reader();
  BOOST_TEST(stats.output_refused.load() == 2u);
  BOOST_TEST(stats.output_paused.load() == 1u);
  BOOST_TEST(stats.slow_readers_closed.load() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()  // output_budget_test
