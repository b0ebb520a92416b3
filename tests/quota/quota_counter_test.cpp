// The lease ledger against a real redis-server: the limit holds for racing instances and
// through outages, repeated or lost replies count nothing twice, a crash leaves only its
// unspent lease, a stop without Redis hands its ledger to the next start, a charge whose
// request was never sent goes back to the lease, the month survives Redis losing its counter,
// and past months' keys (which carry no TTL) are deleted a week after their reset.
#include <boost/test/unit_test.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cmath>
#include <filesystem>
#include <thread>

#include "../redis/redis_test_util.hpp"
#include "support/process.hpp"
#include "widget_gateway/common/fleet_clock.hpp"
#include "widget_gateway/quota/eviction_policy.hpp"
#include "widget_gateway/quota/lease_file.hpp"
#include "widget_gateway/quota/quota_counter.hpp"

using namespace wg;
using namespace wg::quota;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using Verdict = QuotaCounter::Verdict;

namespace wg::quota {
std::ostream& operator<<(std::ostream& out, QuotaCounter::Verdict verdict) {
  constexpr const char* kNames[] = {"allowed", "exhausted", "unavailable"};
  return out << kNames[static_cast<int>(verdict)];
}
}  // namespace wg::quota

namespace {

redis::Settings settings_for(std::uint16_t port) {
  redis::Settings s;
  s.endpoint = {"127.0.0.1", port, 0};
  s.reconnect_min = 50ms;
  s.command_timeout = 300ms;
  s.connect_timeout = 300ms;
  return s;
}

config::QuotaConfig limited(std::uint64_t limit) {
  config::QuotaConfig c;
  c.monthly_limit = limit;
  c.utc_offset = std::chrono::minutes(0);
  return c;
}

// A redis-server, a connected client, and a client that never connects (an outage as a
// worker meets it: every command fails at once).
struct Harness {
  wg::test::RedisServer server;
  asio::io_context ioc;
  redis::Client up{ioc.get_executor(), settings_for(server.port())};
  redis::Client down{ioc.get_executor(), settings_for(server.port())};
  // Real time by default (tests of month boundaries set it).
  ManualClock clock{
      WallTime(std::chrono::time_point_cast<WallTime::duration>(std::chrono::system_clock::now()))};

  Harness() {
    up.start();
    BOOST_REQUIRE(redis::test::run_until(ioc, [&] { return up.connected(); }));
  }
  ~Harness() {
    up.stop();
    ioc.restart();
    ioc.run_for(100ms);
  }

  std::string key() const { return quota_key(quota_period(clock.wall_now(), 0min)); }
  long long charged() { return server.integer({"GET", key()}); }
  long long leased() { return server.integer({"HGET", key() + ":leases", "leased"}); }
  long long field(const std::string& name) {
    return server.integer({"HGET", key() + ":leases", name});
  }

  QuotaCounter::Grant grant(QuotaCounter& q, redis::Client& via) {
    return *redis::test::run(ioc, q.acquire(via));
  }
  Verdict acquire(QuotaCounter& q, redis::Client& via) { return grant(q, via).verdict; }
  // Acquires until refused; returns how many were allowed.
  int spend_all(QuotaCounter& q, redis::Client& via, int at_most = 100000) {
    int allowed = 0;
    while (allowed < at_most && acquire(q, via) == Verdict::allowed) ++allowed;
    return allowed;
  }
  void report(QuotaCounter& q, redis::Client& via) {
    redis::test::run(ioc, [&]() -> asio::awaitable<bool> {
      co_await q.report(via);
      co_return true;
    }());
  }
  bool release(QuotaCounter& q, redis::Client& via) {
    return *redis::test::run(ioc, q.release(via));
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(quota_counter_test)

// remaining: what the fleet may still send, so what was sent and what is reserved both count.
BOOST_AUTO_TEST_CASE(remaining_is_the_limit_less_used_and_leased) {
  Snapshot s;
  s.limit = 1000;
  s.used = 300;
  s.leased = 200;
  BOOST_TEST(s.remaining().value_or(999) == 500u);
  s.leased = 700;
  BOOST_TEST(s.remaining().value_or(999) == 0u);  // never below 0
  s.used = 1200;
  BOOST_TEST(s.remaining().value_or(999) == 0u);
  s.limit = 0;  // no limit: nothing to run out
  BOOST_TEST(!s.remaining().has_value());
}

BOOST_AUTO_TEST_CASE(leases_never_exceed_the_limit_under_racing_instances) {
  Harness h;
  constexpr std::uint64_t kLimit = 500;
  std::vector<std::unique_ptr<QuotaCounter>> instances;
  for (int i = 0; i < 3; ++i) {
    instances.push_back(
        std::make_unique<QuotaCounter>(h.clock, limited(kLimit), "racer-" + std::to_string(i)));
  }
  // The three race: 40 acquirers at once, each looping until refused.
  std::atomic<int> allowed{0};
  int running = 40;
  auto racer = [&](QuotaCounter& q) -> asio::awaitable<void> {
    for (;;) {
      auto grant = co_await q.acquire(h.up);
      if (!grant.allowed()) break;
      ++allowed;
    }
    if (--running == 0) h.ioc.stop();
  };
  for (int i = 0; i < 40; ++i) {
    asio::co_spawn(h.ioc, racer(*instances[static_cast<std::size_t>(i) % 3]), asio::detached);
  }
  h.ioc.restart();
  h.ioc.run_for(20s);
  h.ioc.restart();
  BOOST_TEST(allowed.load() == static_cast<int>(kLimit));
  BOOST_TEST(h.charged() == static_cast<long long>(kLimit));
  for (auto& q : instances) BOOST_TEST(h.release(*q, h.up));
  BOOST_TEST(h.charged() == static_cast<long long>(kLimit));
  BOOST_TEST(h.leased() == 0);
}

// Acquires `count` times, counting the answers; the last of `running` stops `ioc`.
static asio::awaitable<void> race(QuotaCounter& q, redis::Client& via, asio::io_context& ioc,
                                  int& running, std::atomic<int>& allowed,
                                  std::atomic<int>& refused, int count) {
  for (int i = 0; i < count; ++i) {
    if ((co_await q.acquire(via)).allowed()) {
      ++allowed;
    } else {
      ++refused;
    }
  }
  if (--running == 0) ioc.stop();
}

// A gateway's workers share one counter, each with its own thread and Redis connection. A
// lease one worker reserved is spent by that worker's request before any other worker can
// take it: far below the limit, no request is ever refused. (Leases start at one request and
// double, so a fresh counter refills often: each round is a new instance.)
BOOST_AUTO_TEST_CASE(workers_on_two_threads_are_never_refused_below_the_limit) {
  Harness h;
  asio::io_context other_ioc;
  redis::Client other{other_ioc.get_executor(), settings_for(h.server.port())};
  other.start();
  BOOST_REQUIRE(redis::test::run_until(other_ioc, [&] { return other.connected(); }));
  constexpr int kRounds = 30;
  constexpr int kPerRacer = 40;
  std::atomic<int> refused{0};
  int allowed = 0;
  for (int round = 0; round < kRounds; ++round) {
    QuotaCounter q(h.clock, limited(1'000'000), "worker-race-" + std::to_string(round));
    std::atomic<int> round_allowed{0};
    // Three racers per worker; each io_context stops once its own three are done (its
    // client would keep it running).
    int running_here = 3;
    int running_there = 3;
    auto racers = [&](asio::io_context& ioc, redis::Client& via, int& running) {
      for (int r = 0; r < 3; ++r) {
        asio::co_spawn(ioc, race(q, via, ioc, running, round_allowed, refused, kPerRacer),
                       asio::detached);
      }
    };
    racers(h.ioc, h.up, running_here);
    racers(other_ioc, other, running_there);
    h.ioc.restart();
    other_ioc.restart();
    std::thread second([&] { other_ioc.run_for(10s); });
    h.ioc.run_for(10s);
    second.join();
    allowed += round_allowed.load();
    BOOST_TEST(h.release(q, h.up));
  }
  BOOST_TEST(refused.load() == 0);
  BOOST_TEST(allowed == kRounds * 6 * kPerRacer);
  BOOST_TEST(h.charged() == static_cast<long long>(allowed));
  other.stop();
  other_ioc.restart();
  other_ioc.run_for(100ms);
}

BOOST_AUTO_TEST_CASE(without_redis_only_the_lease_is_spent) {
  Harness h;
  QuotaCounter a(h.clock, limited(100000), "a");
  std::uint64_t spent = 0;
  while (spent < 20 || a.snapshot().own_lease == 0) {
    BOOST_REQUIRE(h.acquire(a, h.up) == Verdict::allowed);
    ++spent;
  }
  const std::uint64_t lease = a.snapshot().own_lease;
  BOOST_TEST(h.charged() == static_cast<long long>(spent + lease));

  // Redis away: the lease is spent, then nothing more.
  BOOST_TEST(h.spend_all(a, h.down) == static_cast<int>(lease));
  BOOST_TEST(h.acquire(a, h.down) == Verdict::unavailable);
  // An instance started during the outage has no lease: it spends nothing.
  QuotaCounter b(h.clock, limited(100000), "b");
  BOOST_TEST(h.acquire(b, h.down) == Verdict::unavailable);

  // Redis back: the spending is reported, the counter already covered it.
  h.report(a, h.up);
  BOOST_TEST(h.charged() == static_cast<long long>(spent + lease));
  BOOST_TEST(h.leased() == 0);
  BOOST_TEST(a.snapshot().used == spent + lease);
}

BOOST_AUTO_TEST_CASE(repeated_and_lost_replies_count_nothing_twice) {
  Harness h;
  QuotaCounter a(h.clock, limited(1000), "a");
  long long spent = 0;
  for (; spent < 5; ++spent) BOOST_REQUIRE(h.acquire(a, h.up) == Verdict::allowed);
  // Reports repeated with the same figures change nothing.
  h.report(a, h.up);
  const long long charged = h.charged();
  h.report(a, h.up);
  h.report(a, h.up);
  BOOST_TEST(h.charged() == charged);

  // A lease script that times out but runs: Redis is stalled past the client's timeout
  // while the instance asks for a new lease; the grant it never heard of is adopted by the
  // next reply.
  spent += h.spend_all(a, h.down);  // the current lease, spent without Redis
  // Redis holds every other client's commands for 1 s from the moment it answers this one: the
  // script is queued behind the pause, the client gives up after 300 ms, the script runs.
  BOOST_REQUIRE(h.server.command({"CLIENT", "PAUSE", "1000", "ALL"}) == "OK");
  BOOST_TEST(h.acquire(a, h.up) == Verdict::unavailable);  // timed out, but it will run
  BOOST_REQUIRE(redis::test::run_until(h.ioc, [&] {
    return h.server.integer({"HGET", h.key() + ":leases", "a:g"}) > 0 &&
           a.snapshot().own_lease == 0;
  }));
  h.report(a, h.up);
  BOOST_TEST(a.snapshot().own_lease > 0u);  // the grant the timeout hid
  const int more = h.spend_all(a, h.down);
  BOOST_TEST(more > 0);
  spent += more;
  BOOST_TEST(h.release(a, h.up));
  BOOST_TEST(h.charged() == spent);
  BOOST_TEST(a.snapshot().used == static_cast<std::uint64_t>(spent));
  BOOST_TEST(h.leased() == 0);
}

BOOST_AUTO_TEST_CASE(a_lost_instance_leaves_only_its_unspent_lease) {
  Harness h;
  std::uint64_t spent = 0, unspent = 0;
  {
    QuotaCounter a(h.clock, limited(1000), "a");
    for (int i = 0; i < 20; ++i) BOOST_REQUIRE(h.acquire(a, h.up) == Verdict::allowed);
    spent = 20;
    unspent = a.snapshot().own_lease;
    h.report(a, h.up);
  }  // gone without giving anything back
  BOOST_TEST(h.charged() == static_cast<long long>(spent + unspent));
  BOOST_TEST(h.leased() == static_cast<long long>(unspent));
  QuotaCounter b(h.clock, limited(1000), "b");
  h.report(b, h.up);
  BOOST_TEST(b.snapshot().leased == unspent);
  BOOST_TEST(b.snapshot().used == spent);
  // The rest of the month is b's to spend: never more than the limit.
  const int allowed = h.spend_all(b, h.up);
  BOOST_TEST(static_cast<std::uint64_t>(allowed) == 1000 - spent - unspent);
}

BOOST_AUTO_TEST_CASE(a_stop_without_redis_hands_its_ledger_to_the_next_start) {
  Harness h;
  wg::test::TempDir dir;
  const std::string file = dir.path() + "/quota-lease";
  std::uint64_t spent = 0;
  {
    QuotaCounter a(h.clock, limited(1000), "a");
    for (int i = 0; i < 10; ++i) BOOST_REQUIRE(h.acquire(a, h.up) == Verdict::allowed);
    BOOST_REQUIRE(h.acquire(a, h.down) == Verdict::allowed);  // from the lease, no Redis
    spent = 11;
    BOOST_TEST(!h.release(a, h.down));
    BOOST_REQUIRE(save_lease_state(file, a.lease_state()));
  }
  // The next start takes the file (and only one start can).
  std::optional<LeaseState> state = take_lease_state(file);
  BOOST_REQUIRE(state.has_value());
  BOOST_TEST(!take_lease_state(file).has_value());
  QuotaCounter c(h.clock, limited(1000), "c");
  c.restore(*state);
  BOOST_TEST(c.instance() == "a");
  // What a's stop gave back stays given back, even before Redis has heard of it.
  BOOST_TEST(h.spend_all(c, h.down) == 0);
  BOOST_TEST(h.charged() == 15);  // a's grants: what the counter holds until c reports
  BOOST_TEST(h.release(c, h.up));
  BOOST_TEST(h.charged() == static_cast<long long>(spent));
  BOOST_TEST(h.leased() == 0);
}

BOOST_AUTO_TEST_CASE(unknown_ids_have_a_budget_of_their_own) {
  Harness h;
  config::QuotaConfig c = limited(100);
  c.unknown_share = 0.05;  // 5 lookups
  QuotaCounter q(h.clock, c, "q");
  auto unknown = [&](redis::Client& via) {
    return redis::test::run(h.ioc, q.acquire_unknown(via))->verdict;
  };
  for (int i = 0; i < 5; ++i) BOOST_TEST((unknown(h.up) == Verdict::allowed));
  BOOST_TEST((unknown(h.up) == Verdict::exhausted));
  // A refund (the id turned out valid) frees one.
  redis::test::run(h.ioc, [&]() -> asio::awaitable<bool> {
    co_await q.refund_unknown(h.up, quota_period(h.clock.wall_now(), 0min));
    co_return true;
  }());
  BOOST_TEST((unknown(h.up) == Verdict::allowed));
  BOOST_TEST((unknown(h.up) == Verdict::exhausted));
  BOOST_TEST(q.snapshot().unknown_used == 5u);
  BOOST_TEST(*q.snapshot().unknown_limit == 5u);
  // Without Redis the budget cannot be checked: refused.
  BOOST_TEST((unknown(h.down) == Verdict::unavailable));
  // Unlimited: no cap, nothing to check.
  QuotaCounter unlimited(h.clock, limited(0), "u");
  BOOST_TEST(!unlimited.snapshot().unknown_limit.has_value());
  BOOST_TEST(
      (redis::test::run(h.ioc, unlimited.acquire_unknown(h.down))->verdict == Verdict::allowed));
}

BOOST_AUTO_TEST_CASE(a_charge_whose_request_was_never_sent_goes_back_to_the_lease) {
  Harness h;
  QuotaCounter a(h.clock, limited(1000), "a");
  std::vector<QuotaCounter::Grant> grants;
  for (int i = 0; i < 5; ++i) {
    grants.push_back(h.grant(a, h.up));
    BOOST_REQUIRE(grants.back().allowed());
  }
  const std::uint64_t lease = a.snapshot().own_lease;
  // Given back after a report counted it as sent: the next report takes it back.
  h.report(a, h.up);
  BOOST_TEST(a.snapshot().used == 5u);
  a.give_back(grants[4]);
  BOOST_TEST(a.snapshot().own_lease == lease + 1);
  h.report(a, h.up);
  BOOST_TEST(a.snapshot().used == 4u);
  BOOST_TEST(h.field("a:u") == 1);
  BOOST_TEST(h.leased() == static_cast<long long>(lease + 1));
  // Given back before any report heard of it.
  grants.push_back(h.grant(a, h.up));
  a.give_back(grants.back());
  BOOST_TEST(a.snapshot().own_lease == lease + 1);
  // The unit is spent again, from the lease, without Redis.
  BOOST_TEST(h.acquire(a, h.down) == Verdict::allowed);
  BOOST_TEST(a.snapshot().own_lease == lease);
  h.report(a, h.up);
  BOOST_TEST(h.field("a:s") == 7);
  BOOST_TEST(h.field("a:u") == 2);
  // Repeated reports change nothing; the stop gives the rest back: 5 sent, exactly.
  h.report(a, h.up);
  BOOST_TEST(h.release(a, h.up));
  BOOST_TEST(h.charged() == 5);
  BOOST_TEST(h.leased() == 0);
  BOOST_TEST(a.snapshot().used == 5u);
  // A refusal has nothing to give back.
  a.give_back(QuotaCounter::Grant{});
  BOOST_TEST(a.snapshot().used == 5u);
}

BOOST_AUTO_TEST_CASE(a_deleted_counter_is_counted_again_from_the_ledger) {
  Harness h;
  QuotaCounter a(h.clock, limited(1000), "a");
  QuotaCounter b(h.clock, limited(1000), "b");
  for (int i = 0; i < 10; ++i) BOOST_REQUIRE(h.acquire(a, h.up) == Verdict::allowed);
  for (int i = 0; i < 4; ++i) BOOST_REQUIRE(h.acquire(b, h.up) == Verdict::allowed);
  BOOST_TEST(h.release(b, h.up));  // b stopped: only its ledger remembers its 4
  h.report(a, h.up);
  const long long charged = h.charged();
  BOOST_TEST(a.snapshot().used == 14u);

  BOOST_REQUIRE_EQUAL(h.server.command({"DEL", h.key()}), "1");
  h.report(a, h.up);
  BOOST_TEST(h.charged() == charged);
  BOOST_TEST(a.snapshot().used == 14u);
  BOOST_TEST(h.release(a, h.up));
  BOOST_TEST(h.charged() == 14);
  BOOST_TEST(h.leased() == 0);
}

BOOST_AUTO_TEST_CASE(an_emptied_redis_gets_the_month_back_from_the_high_water_marks) {
  Harness h;
  // a and b spend and stop; c and d live on, and have seen everyone's spending.
  QuotaCounter a(h.clock, limited(100000), "a"), b(h.clock, limited(100000), "b");
  QuotaCounter c(h.clock, limited(100000), "c"), d(h.clock, limited(100000), "d");
  const int spends[] = {30, 20, 7, 5};
  QuotaCounter* all[] = {&a, &b, &c, &d};
  for (int i = 0; i < 4; ++i) {
    for (int n = 0; n < spends[i]; ++n) BOOST_REQUIRE(h.acquire(*all[i], h.up) == Verdict::allowed);
  }
  BOOST_TEST(h.release(a, h.up));
  BOOST_TEST(h.release(b, h.up));
  h.report(c, h.up);
  h.report(d, h.up);
  h.report(c, h.up);
  BOOST_TEST(c.snapshot().used == 62u);

  // Redis comes back empty (a restart without persistence).
  BOOST_REQUIRE_EQUAL(h.server.command({"FLUSHALL"}), "OK");
  h.report(c, h.up);
  BOOST_TEST(h.charged() >= 62);
  BOOST_TEST(c.snapshot().used == 62u);
  // d's ledger is rebuilt too; its spending is already in the mark: not counted twice.
  h.report(d, h.up);
  BOOST_TEST(d.snapshot().used == 62u);
  // Both spend on and stop: the counter is exact again.
  for (int n = 0; n < 3; ++n) BOOST_REQUIRE(h.acquire(c, h.up) == Verdict::allowed);
  BOOST_TEST(h.release(c, h.up));
  BOOST_TEST(h.release(d, h.up));
  BOOST_TEST(h.charged() == 65);
  BOOST_TEST(h.leased() == 0);
}

BOOST_AUTO_TEST_CASE(the_state_file_keeps_the_high_water_mark_for_the_next_start) {
  Harness h;
  wg::test::TempDir dir;
  const std::string file = dir.path() + "/quota-lease";
  {
    QuotaCounter a(h.clock, limited(1000), "a");
    QuotaCounter e(h.clock, limited(1000), "e");
    for (int i = 0; i < 9; ++i) BOOST_REQUIRE(h.acquire(a, h.up) == Verdict::allowed);
    for (int i = 0; i < 2; ++i) BOOST_REQUIRE(h.acquire(e, h.up) == Verdict::allowed);
    BOOST_TEST(h.release(a, h.up));
    BOOST_TEST(h.release(e, h.up));  // settled, and it saw a's 9
    BOOST_REQUIRE(save_lease_state(file, e.lease_state()));
  }
  BOOST_REQUIRE_EQUAL(h.server.command({"FLUSHALL"}), "OK");
  std::optional<LeaseState> state = take_lease_state(file);
  BOOST_REQUIRE(state.has_value());
  BOOST_TEST(state->seen.at(quota_period(h.clock.wall_now(), 0min).month) == 11u);
  QuotaCounter next(h.clock, limited(1000), "next");
  next.restore(*state);
  h.report(next, h.up);
  BOOST_TEST(h.charged() == 11);
  BOOST_TEST(next.snapshot().used == 11u);
}

BOOST_AUTO_TEST_CASE(past_months_keys_carry_no_ttl_and_are_deleted_a_week_after_the_reset) {
  Harness h;
  using namespace std::chrono;
  h.clock.set_wall(WallTime(sys_days(year(2031) / March / 20)));
  const QuotaPeriod march = quota_period(h.clock.wall_now(), 0min);
  QuotaCounter a(h.clock, limited(1000), "a");
  for (int i = 0; i < 3; ++i) BOOST_REQUIRE(h.acquire(a, h.up) == Verdict::allowed);
  BOOST_TEST(redis::test::run(h.ioc, a.acquire_unknown(h.up))->allowed());
  h.report(a, h.up);
  const std::vector<std::string> keys{quota_key(march), leases_key(march), unknown_key(march)};
  for (const auto& key : keys) BOOST_TEST(h.server.integer({"TTL", key}) == -1, key);

  // April: March's lease goes back at the first report; its keys stay for a week and a day.
  h.clock.set_wall(WallTime(sys_days(year(2031) / April / 1) + seconds(30)));
  h.report(a, h.up);
  BOOST_TEST(h.server.command({"GET", keys[0]}) == "3");
  h.clock.set_wall(WallTime(sys_days(year(2031) / April / 8) + hours(23)));
  h.report(a, h.up);
  for (const auto& key : keys) BOOST_TEST(h.server.integer({"EXISTS", key}) == 1, key);
  h.clock.set_wall(WallTime(sys_days(year(2031) / April / 9)));
  h.report(a, h.up);
  for (const auto& key : keys) BOOST_TEST(h.server.integer({"EXISTS", key}) == 0, key);

  // A ledger of March restored this late is dropped, never reported: the keys stay deleted.
  LeaseState late{"late", {{march.month, {5, 2, 0}}}, {{march.month, 9}}};
  QuotaCounter b(h.clock, limited(1000), "b");
  b.restore(late);
  h.report(b, h.up);
  BOOST_TEST(h.release(b, h.up));
  for (const auto& key : keys) BOOST_TEST(h.server.integer({"EXISTS", key}) == 0, key);
}

// The month moves back across the 1st and comes again (Redis's clock stepped back by NTP, a
// host restored from a snapshot, quota.utc_offset reloaded there and back): every request is
// counted in the month it was spent in, and nothing the month granted before is spent again
// uncounted. Before, the month's ledger here was dropped when it went, rebuilt at zero when it
// came back, and its old grant was spent again: the counters held 100 of 150.
BOOST_AUTO_TEST_CASE(a_month_that_moves_back_and_forth_loses_no_count) {
  Harness h;
  using namespace std::chrono;
  h.clock.set_wall(WallTime(sys_days(year(2026) / December / 1) + minutes(30)));
  FleetClock fleet(h.clock);  // Redis's clock: the seam the test moves
  fleet.pin(0ns);
  QuotaCounter q(fleet, limited(0), "stepper");
  const QuotaPeriod december = quota_period(fleet.wall_now(), 0min);
  auto spend = [&](int n) {
    for (int i = 0; i < n; ++i) BOOST_REQUIRE(h.acquire(q, h.up) == Verdict::allowed);
    h.report(q, h.up);
  };
  spend(50);
  fleet.pin(-hours(1));  // November 30th, 23:30
  const QuotaPeriod november = quota_period(fleet.wall_now(), 0min);
  BOOST_REQUIRE(november.month != december.month);
  spend(50);
  fleet.pin(0ns);  // December again
  spend(50);
  BOOST_TEST(h.release(q, h.up));
  const long long counted = h.server.integer({"GET", quota_key(december)}) +
                            h.server.integer({"GET", quota_key(november)});
  BOOST_TEST(counted == 150);
  BOOST_TEST(h.server.integer({"HGET", leases_key(december), "leased"}) == 0);

  // The same with the offset reloaded to -14:00 and back, on the 1st at 00:30 UTC.
  QuotaCounter r(fleet, limited(0), "reloaded");
  auto spend_r = [&](int n) {
    for (int i = 0; i < n; ++i) BOOST_REQUIRE(h.acquire(r, h.up) == Verdict::allowed);
    h.report(r, h.up);
  };
  spend_r(30);
  config::QuotaConfig west = limited(0);
  west.utc_offset = -hours(14);
  r.set_config(west);
  BOOST_REQUIRE(r.snapshot().month == november.month);
  spend_r(30);
  r.set_config(limited(0));
  spend_r(30);
  BOOST_TEST(h.release(r, h.up));
  const long long reloaded =
      h.server.integer({"GET", quota_key(december)}) +
      h.server.integer({"GET", quota_key(quota_period(fleet.wall_now(), -hours(14)))});
  BOOST_TEST(reloaded == counted + 90);
}

// A clock stepped back on this host alone changes no month: months follow Redis's clock, as
// TIME shows it.
BOOST_AUTO_TEST_CASE(a_local_clock_stepped_back_moves_no_month) {
  Harness h;
  using namespace std::chrono;
  const WallTime first = WallTime(sys_days(year(2026) / December / 1) + minutes(30));
  h.clock.set_wall(first);
  FleetClock fleet(h.clock);
  fleet.observe(first, first, first);  // TIME: the host agrees with Redis
  QuotaCounter q(fleet, limited(0), "stepped");
  const QuotaPeriod december = quota_period(fleet.wall_now(), 0min);
  for (int i = 0; i < 20; ++i) BOOST_REQUIRE(h.acquire(q, h.up) == Verdict::allowed);
  // NTP steps this host back into November; Redis's TIME, a minute on, says December still.
  h.clock.set_wall(WallTime(sys_days(year(2026) / November / 30) + hours(23)));
  fleet.observe(first + minutes(1), h.clock.wall_now(), h.clock.wall_now());
  BOOST_TEST(q.snapshot().month == december.month);
  for (int i = 0; i < 20; ++i) BOOST_REQUIRE(h.acquire(q, h.up) == Verdict::allowed);
  BOOST_TEST(h.release(q, h.up));
  BOOST_TEST(h.server.integer({"GET", quota_key(december)}) == 40);
}

// The projection /admin/quota and wg_quota_projected_month_end report: from the fleet's
// recent burn, read at each report, never from the month-to-date average and never from the
// jump of a first reading.
BOOST_AUTO_TEST_CASE(the_projection_follows_the_fleets_recent_burn) {
  Harness h;
  using namespace std::chrono;
  h.clock.set_wall(WallTime(sys_days(year(2031) / April / 25)));
  const QuotaPeriod april = quota_period(h.clock.wall_now(), 0min);
  QuotaCounter a(h.clock, limited(1'000'000), "a");
  QuotaCounter b(h.clock, limited(1'000'000), "b");
  BOOST_REQUIRE(h.spend_all(b, h.up, 1000) == 1000);
  h.report(b, h.up);
  // Before Redis answered: what this instance knows, projected at no rate.
  BOOST_TEST(a.snapshot().projected_month_end == a.snapshot().used);
  // A report Redis did not answer reads nothing. The first reading is then the fleet's
  // spending of three weeks, not a burst.
  h.report(a, h.down);
  h.report(a, h.up);
  BOOST_TEST(a.snapshot().used == 1000u);
  BOOST_TEST(a.snapshot().projected_month_end == 1000u);

  // 14 requests in two minutes, each instance reporting every second.
  for (int s = 1; s <= 120; ++s) {
    h.clock.advance(1s);
    if (s * 14 / 120 > (s - 1) * 14 / 120) BOOST_REQUIRE(h.acquire(b, h.up) == Verdict::allowed);
    h.report(b, h.up);
    h.report(a, h.up);
  }
  const Snapshot seen = a.snapshot();
  BOOST_TEST(seen.used == 1014u);
  // Two minutes of history count as five: 14 per 300 s until the reset. (The month-to-date
  // average would project about 1,250.)
  const double left = duration<double>(april.resets_at - h.clock.wall_now()).count();
  BOOST_TEST(std::abs(static_cast<double>(seen.projected_month_end) -
                      (1014.0 + 14.0 / 300.0 * left)) <= 0.5);  // rounded
  BOOST_TEST(seen.projected_month_end > 20'000u);
  // Every instance that hears the fleet projects alike.
  BOOST_TEST(b.snapshot().projected_month_end == seen.projected_month_end);

  // An hour with no traffic: the projection is what was used.
  for (int m = 1; m <= 61; ++m) {
    h.clock.advance(1min);
    h.report(a, h.up);
  }
  BOOST_TEST(a.snapshot().projected_month_end == 1014u);
  BOOST_TEST(h.release(a, h.up));
  BOOST_TEST(h.release(b, h.up));
}

BOOST_AUTO_TEST_CASE(an_eviction_policy_that_could_take_the_quota_keys_is_recognised) {
  for (const char* policy : {"allkeys-lru", "allkeys-lfu", "allkeys-random", "ALLKEYS-LRU"}) {
    BOOST_TEST(policy_evicts_quota_keys(policy), policy);
  }
  for (const char* policy : {"noeviction", "volatile-ttl", "volatile-lru", "volatile-lfu",
                             "volatile-random", "", "allkeys-"}) {
    BOOST_TEST(!policy_evicts_quota_keys(policy), policy);
  }
  Harness h;
  BOOST_REQUIRE_EQUAL(h.server.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}), "OK");
  BOOST_TEST(*redis::test::run(h.ioc, warn_if_quota_evictable(h.up)));     // answered (and warned)
  BOOST_TEST(!*redis::test::run(h.ioc, warn_if_quota_evictable(h.down)));  // ask again later
}

BOOST_AUTO_TEST_SUITE_END()  // quota_counter_test
