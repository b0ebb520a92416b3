#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "widget_gateway/client_policy/rate_limiter.hpp"

using namespace std::chrono_literals;
using wg::SteadyTime;
using wg::client_policy::RateLimiter;
namespace ip = boost::asio::ip;

namespace {

ip::address addr(const char* text) {
  return ip::make_address(text);
}

const SteadyTime kStart{std::chrono::hours(1000)};

int allowed_in_a_row(RateLimiter& limiter, const ip::address& client, SteadyTime now,
                     int attempts) {
  int allowed = 0;
  for (int i = 0; i < attempts; ++i)
    if (limiter.acquire(client, now).allowed) ++allowed;
  return allowed;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rate_limiter_test)

BOOST_AUTO_TEST_CASE(burst_then_refusal) {
  RateLimiter limiter(1.0, 5);
  BOOST_TEST(limiter.enabled());
  auto client = addr("198.51.100.7");
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 20) == 5);
  auto refused = limiter.acquire(client, kStart);
  BOOST_TEST(!refused.allowed);
  BOOST_TEST(refused.retry_after.count() == 1);
  // Another client has its own bucket.
  BOOST_TEST(allowed_in_a_row(limiter, addr("198.51.100.8"), kStart, 20) == 5);
}

BOOST_AUTO_TEST_CASE(refill_after_advancing_time) {
  RateLimiter limiter(2.0, 4);  // one token per 500 ms
  auto client = addr("198.51.100.7");
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 10) == 4);
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart + 499ms, 10) == 0);
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart + 500ms, 10) == 1);
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart + 1500ms, 10) == 2);
  // A long pause refills to the burst, not beyond.
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart + 1h, 10) == 4);
  // Refused attempts take nothing: steady 2/s keeps being allowed.
  SteadyTime t = kStart + 2h;
  BOOST_TEST(allowed_in_a_row(limiter, client, t, 10) == 4);
  for (int i = 1; i <= 20; ++i) {
    t += 500ms;
    BOOST_TEST(allowed_in_a_row(limiter, client, t, 3) == 1);
  }
}

BOOST_AUTO_TEST_CASE(a_refunded_token_can_be_taken_again_and_never_overfills) {
  RateLimiter limiter(1.0, 2);
  auto client = addr("198.51.100.7");
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 5) == 2);
  limiter.refund(client, kStart);
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 5) == 1);
  // Refunds past a full bucket give nothing more than the burst.
  for (int i = 0; i < 5; ++i) limiter.refund(client, kStart);
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 5) == 2);
  // A client never seen has nothing to get back, and is not tracked for it.
  limiter.refund(addr("198.51.100.9"), kStart);
  BOOST_TEST(limiter.tracked() == 1u);
}

BOOST_AUTO_TEST_CASE(retry_after_values) {
  auto client = addr("198.51.100.7");
  {
    RateLimiter limiter(0.1, 1);  // one token per 10 s
    BOOST_TEST(limiter.acquire(client, kStart).allowed);
    BOOST_TEST(limiter.acquire(client, kStart).retry_after.count() == 10);
    BOOST_TEST(limiter.acquire(client, kStart + 2500ms).retry_after.count() == 8);  // 7.5 up
    BOOST_TEST(limiter.acquire(client, kStart + 9999ms).retry_after.count() == 1);
    BOOST_TEST(limiter.acquire(client, kStart + 10s).allowed);
  }
  {
    RateLimiter limiter(100.0, 3);  // sub-second waits still say 1
    BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 3) == 3);
    auto d = limiter.acquire(client, kStart);
    BOOST_TEST(!d.allowed);
    BOOST_TEST(d.retry_after.count() == 1);
  }
  {
    RateLimiter limiter(1.0 / 60, 2);  // one per minute
    BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 2) == 2);
    BOOST_TEST(limiter.acquire(client, kStart).retry_after.count() == 60);
    BOOST_TEST(limiter.acquire(client, kStart + 30s).retry_after.count() == 30);
  }
  {
    RateLimiter limiter(1e-9, 1);  // absurdly slow: clamped, no overflow
    BOOST_TEST(limiter.acquire(client, kStart).allowed);
    auto d = limiter.acquire(client, kStart);
    BOOST_TEST(!d.allowed);
    BOOST_TEST(d.retry_after.count() > 0);
  }
}

BOOST_AUTO_TEST_CASE(disabled) {
  for (double rate : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    RateLimiter limiter(rate, 1);
    BOOST_TEST(!limiter.enabled());
    BOOST_TEST(allowed_in_a_row(limiter, addr("198.51.100.7"), kStart, 1000) == 1000);
    BOOST_TEST(limiter.tracked() == 0u);
  }
}

BOOST_AUTO_TEST_CASE(burst_zero_is_one) {
  RateLimiter limiter(1.0, 0);
  BOOST_TEST(allowed_in_a_row(limiter, addr("198.51.100.7"), kStart, 5) == 1);
}

BOOST_AUTO_TEST_CASE(ipv6_clients_share_their_slash_64) {
  RateLimiter limiter(1.0, 2);
  BOOST_TEST(limiter.acquire(addr("2001:db8:1:2::1"), kStart).allowed);
  BOOST_TEST(limiter.acquire(addr("2001:db8:1:2:ffff:ffff:ffff:ffff"), kStart).allowed);
  BOOST_TEST(!limiter.acquire(addr("2001:db8:1:2::abcd"), kStart).allowed);
  // The neighbouring /64 is another client.
  BOOST_TEST(limiter.acquire(addr("2001:db8:1:3::1"), kStart).allowed);
  // IPv4 and IPv4-mapped IPv6 are one client; IPv4 clients are per address.
  BOOST_TEST(allowed_in_a_row(limiter, addr("198.51.100.7"), kStart, 1) == 1);
  BOOST_TEST(allowed_in_a_row(limiter, addr("::ffff:198.51.100.7"), kStart, 5) == 1);
  BOOST_TEST(allowed_in_a_row(limiter, addr("198.51.100.8"), kStart, 5) == 2);
  // ::/64 (which holds ::1) is not confused with IPv4 clients.
  BOOST_TEST(allowed_in_a_row(limiter, addr("::1"), kStart, 5) == 2);
  BOOST_TEST(limiter.tracked() == 5u);
}

BOOST_AUTO_TEST_CASE(many_clients_stay_within_the_bound) {
  constexpr std::size_t kMax = 1000;
  RateLimiter limiter(1.0, 1, kMax, 16);
  // An attacker rotating through 50 000 addresses.
  for (std::uint32_t i = 0; i < 50000; ++i) {
    ip::address_v4 a(0x0A000000u + i);
    BOOST_TEST_REQUIRE(limiter.acquire(a, kStart).allowed);
    if (i % 5000 == 0) BOOST_TEST_REQUIRE(limiter.tracked() <= kMax);
  }
  BOOST_TEST(limiter.tracked() <= kMax);
  BOOST_TEST(limiter.tracked() >= kMax / 2);  // the table is used, not emptied
  // A rotating IPv6 attacker inside one /64 is one client and costs one slot.
  RateLimiter v6(1.0, 3, kMax, 16);
  int allowed = 0;
  for (std::uint32_t i = 0; i < 10000; ++i) {
    auto bytes = ip::make_address_v6("2001:db8::").to_bytes();
    bytes[14] = static_cast<unsigned char>(i >> 8);
    bytes[15] = static_cast<unsigned char>(i);
    if (v6.acquire(ip::address_v6(bytes), kStart).allowed) ++allowed;
  }
  BOOST_TEST(allowed == 3);
  BOOST_TEST(v6.tracked() == 1u);
}

BOOST_AUTO_TEST_CASE(recently_seen_clients_survive_eviction) {
  // A single shard, room for 4: the least recently seen client is the one forgotten.
  RateLimiter limiter(1.0, 1, 4, 1);
  auto a = addr("192.0.2.1");
  BOOST_TEST(limiter.acquire(a, kStart).allowed);
  for (const char* other : {"192.0.2.2", "192.0.2.3", "192.0.2.4"}) {
    BOOST_TEST(limiter.acquire(addr(other), kStart).allowed);
    BOOST_TEST(!limiter.acquire(a, kStart).allowed);  // a stays most recent
  }
  BOOST_TEST(limiter.acquire(addr("192.0.2.5"), kStart).allowed);  // evicts .2, not a
  BOOST_TEST(!limiter.acquire(a, kStart).allowed);
  BOOST_TEST(limiter.tracked() == 4u);
}

BOOST_AUTO_TEST_CASE(time_going_backwards_is_harmless) {
  RateLimiter limiter(1.0, 2);
  auto client = addr("198.51.100.7");
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart + 10s, 2) == 2);
  // A thread that read the clock earlier arrives late: no extra tokens.
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart, 5) == 0);
  BOOST_TEST(allowed_in_a_row(limiter, client, kStart + 11s, 5) == 1);
}

BOOST_AUTO_TEST_CASE(concurrent_use_never_exceeds_the_bucket) {
  // Four threads hammer two clients while a fifth moves time in 10 ms steps. Whatever the
  // interleaving (and however late a thread reads the clock), each client gets at most
  // burst + rate * elapsed. Then time jumps a second and stands still: every bucket is full
  // again, and the threads, together asking each client for more than a burst, get exactly
  // one burst more.
  constexpr double kRate = 50;
  constexpr std::uint32_t kBurst = 10;
  constexpr int kSteps = 200;
  constexpr int kFinalPerThread = 25;  // per client: 4 x 25 > kBurst
  RateLimiter limiter(kRate, kBurst, 1000, 4);
  std::atomic<SteadyTime::rep> now{kStart.time_since_epoch().count()};
  std::atomic<bool> moving_done{false};
  std::atomic<int> in_first_phase{4};
  std::atomic<bool> final_phase{false};
  std::atomic<int> moving_a{0}, moving_b{0}, final_a{0}, final_b{0};
  const auto a = addr("198.51.100.7");
  const auto b = addr("2001:db8::1");
  auto read_clock = [&] { return SteadyTime{SteadyTime::duration{now.load()}}; };

  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int spins = t; !moving_done.load(); ++spins) {
        const bool is_a = spins % 2 == 0;
        if (limiter.acquire(is_a ? a : b, read_clock()).allowed) ++(is_a ? moving_a : moving_b);
      }
      --in_first_phase;
      while (!final_phase.load()) std::this_thread::yield();
      for (int i = 0; i < kFinalPerThread; ++i) {
        if (limiter.acquire(a, read_clock()).allowed) ++final_a;
        if (limiter.acquire(b, read_clock()).allowed) ++final_b;
      }
    });
  }
  for (int step = 0; step < kSteps; ++step) {
    std::this_thread::yield();
    now.fetch_add(std::chrono::duration_cast<SteadyTime::duration>(10ms).count());
  }
  moving_done.store(true);
  while (in_first_phase.load() > 0) std::this_thread::yield();
  now.fetch_add(std::chrono::duration_cast<SteadyTime::duration>(1s).count());
  final_phase.store(true);
  for (auto& thread : threads) thread.join();

  const int bound = static_cast<int>(kBurst + kRate * (kSteps * 0.010));  // 10 + 100
  BOOST_TEST(moving_a.load() <= bound);
  BOOST_TEST(moving_b.load() <= bound);
  BOOST_TEST(final_a.load() == static_cast<int>(kBurst));
  BOOST_TEST(final_b.load() == static_cast<int>(kBurst));
}

BOOST_AUTO_TEST_SUITE_END()  // rate_limiter_test
