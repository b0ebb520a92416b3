#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "widget_gateway/cache/early_refresh.hpp"

using namespace std::chrono;
using wg::WallTime;
using wg::cache::should_refresh_early;

namespace {

const WallTime kExpiry = WallTime{hours(24 * 365 * 56)};

// A reader `left` before expiry, with a recompute cost of one second and beta 1.
bool refresh(milliseconds left, double draw, milliseconds cost = seconds(1), double beta = 1.0) {
  return should_refresh_early(kExpiry - left, kExpiry, cost, beta, draw);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(early_refresh_test)

BOOST_AUTO_TEST_CASE(expired_entries_always_refresh) {
  BOOST_TEST(should_refresh_early(kExpiry, kExpiry, milliseconds(0), 1.0, 1.0));
  BOOST_TEST(should_refresh_early(kExpiry + seconds(5), kExpiry, milliseconds(0), 0.0, 0.5));
  BOOST_TEST(refresh(milliseconds(-1), 1.0));
}

BOOST_AUTO_TEST_CASE(fixed_draws_give_the_xfetch_head_start) {
  // -ln(e^-2) = 2: a head start of 2 s with a 1 s recompute cost.
  const double two = std::exp(-2.0);
  BOOST_TEST(refresh(milliseconds(1999), two));
  BOOST_TEST(!refresh(milliseconds(2001), two));
  // beta scales the head start.
  BOOST_TEST(refresh(milliseconds(3999), two, seconds(1), 2.0));
  BOOST_TEST(!refresh(milliseconds(4001), two, seconds(1), 2.0));
  // So does the recompute cost.
  BOOST_TEST(refresh(milliseconds(599), two, milliseconds(300)));
  BOOST_TEST(!refresh(milliseconds(601), two, milliseconds(300)));
  // A draw of 1 gives no head start.
  BOOST_TEST(!refresh(milliseconds(1), 1.0));
  BOOST_TEST(!refresh(milliseconds(1), 1.5));
}

BOOST_AUTO_TEST_CASE(zero_cost_or_beta_never_refreshes_early) {
  BOOST_TEST(!refresh(milliseconds(1), 1e-9, milliseconds(0)));
  BOOST_TEST(!refresh(milliseconds(1), 1e-9, seconds(1), 0.0));
  BOOST_TEST(!refresh(milliseconds(1), 1e-9, seconds(1), -1.0));
}

BOOST_AUTO_TEST_CASE(a_zero_draw_is_guarded) {
  // 0 is taken as the smallest positive double: -ln of it is about 708, the longest head start.
  BOOST_TEST(refresh(seconds(700), 0.0));
  BOOST_TEST(!refresh(seconds(710), 0.0));
  BOOST_TEST(refresh(seconds(700), -0.5));
  BOOST_TEST(refresh(seconds(700), std::nan("")));
}

// Over an evenly spread sequence of draws, the share of readers that refresh is
// P(-ln U >= left / cost) = e^(-left / cost): it rises as expiry approaches.
BOOST_AUTO_TEST_CASE(refresh_probability_rises_as_expiry_approaches) {
  constexpr int kDraws = 10000;
  std::vector<double> draws;
  for (int i = 0; i < kDraws; ++i) draws.push_back((i + 0.5) / kDraws);

  double previous = -1.0;
  for (const int left_ms : {8000, 4000, 2000, 1000, 500, 100, 10}) {
    int refreshed = 0;
    for (const double draw : draws) refreshed += refresh(milliseconds(left_ms), draw) ? 1 : 0;
    const double share = static_cast<double>(refreshed) / kDraws;
    BOOST_TEST_MESSAGE("left " << left_ms << " ms: " << share);
    BOOST_TEST(share > previous);
    BOOST_TEST(std::abs(share - std::exp(-left_ms / 1000.0)) < 0.001);
    previous = share;
  }
}

BOOST_AUTO_TEST_SUITE_END()  // early_refresh_test
