#include <boost/test/unit_test.hpp>

#include "frontend/readiness.hpp"
#include "widget_gateway/quota/quota_counter.hpp"

using wg::frontend::readiness_of;
using wg::frontend::ReadinessFacts;

namespace {

struct Row {
  const char* what;
  ReadinessFacts facts;
  unsigned status;
  std::string_view word;
};

ReadinessFacts facts(bool redis_up, bool copies, bool lease, bool circuit_open = false,
                     bool exhausted = false) {
  ReadinessFacts f;
  f.redis_up = redis_up;
  f.copies_in_l1 = copies;
  f.lease_left = lease;
  f.circuit_open = circuit_open;
  f.quota_exhausted = exhausted;
  return f;
}

ReadinessFacts held(ReadinessFacts f) {
  f.upstream_hold = true;
  return f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(readiness_test)

BOOST_AUTO_TEST_CASE(ready_degraded_or_unavailable_by_what_can_still_serve) {
  ReadinessFacts draining = facts(true, true, true);
  draining.draining = true;
  const Row rows[] = {
      {"all well", facts(true, false, true), 200, "ready"},
      {"Redis up, quota limit without a lease: Redis leases", facts(true, false, false), 200,
       "ready"},
      {"Redis up, circuit open: the cache serves", facts(true, false, true, true), 200, "degraded"},
      {"Redis up, quota exhausted: the cache serves", facts(true, false, false, false, true), 200,
       "degraded"},
      {"no Redis, unlimited quota or a lease: upstream serves", facts(false, false, true), 200,
       "degraded"},
      {"no Redis, copies in L1", facts(false, true, false), 200, "degraded"},
      {"no Redis, no copy, no lease: nothing", facts(false, false, false), 503, "degraded"},
      {"no Redis, no copy, circuit open", facts(false, false, true, true), 503, "degraded"},
      {"no Redis, no copy, quota exhausted", facts(false, false, true, false, true), 503,
       "degraded"},
      {"no Redis, copies in L1, circuit open", facts(false, true, true, true), 200, "degraded"},
      {"draining", draining, 503, "draining"},
      {"Redis up, upstream's hold: the cache serves", held(facts(true, false, true)), 200,
       "degraded"},
      {"no Redis, copies in L1, upstream's hold", held(facts(false, true, true)), 200, "degraded"},
      {"no Redis, no copy, upstream's hold: nothing", held(facts(false, false, true)), 503,
       "degraded"},
  };
  for (const Row& row : rows) {
    BOOST_TEST_CONTEXT(row.what) {
      const auto answer = readiness_of(row.facts);
      BOOST_TEST(answer.status == row.status);
      BOOST_TEST(to_string(answer.state) == row.word);
    }
  }
}

// server.public_readyz_detail = false: the same status code, and only the status word.
BOOST_AUTO_TEST_CASE(the_answer_without_detail_is_the_status_alone) {
  wg::ManualClock clock;
  wg::quota::QuotaCounter quota(clock, wg::config::QuotaConfig{}, "test");
  bool redis_up = true;
  wg::frontend::Readiness readiness([&] { return redis_up; }, [] { return false; }, quota);

  auto full = readiness.response();
  BOOST_TEST(full.status == 200u);
  BOOST_TEST(full.body == R"({"status":"ready","redis":"up","upstream":"ok","quota":"normal"})");
  auto bare = readiness.response(false);
  BOOST_TEST(bare.status == 200u);
  BOOST_TEST(bare.body == R"({"status":"ready"})");

  redis_up = false;  // no Redis, no copy; an unlimited quota still lets upstream serve
  BOOST_TEST(readiness.response(false).body == R"({"status":"degraded"})");
  readiness.set_draining();
  auto draining = readiness.response(false);
  BOOST_TEST(draining.status == 503u);
  BOOST_TEST(draining.body == R"({"status":"draining"})");
}

BOOST_AUTO_TEST_SUITE_END()  // readiness_test
