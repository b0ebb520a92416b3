#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>

#include "wg-bench/histogram.hpp"

using wg::bench::Histogram;

BOOST_AUTO_TEST_SUITE(histogram_test)

BOOST_AUTO_TEST_SUITE(histogram)

BOOST_AUTO_TEST_CASE(small_values_have_their_own_buckets) {
  for (std::uint64_t v = 0; v < 256; ++v) {
    BOOST_TEST(Histogram::bucket_index(v) == v);
    BOOST_TEST(Histogram::bucket_lowest(v) == v);
    BOOST_TEST(Histogram::bucket_highest(v) == v);
  }
}

BOOST_AUTO_TEST_CASE(buckets_are_contiguous_and_cover_the_whole_range) {
  for (std::size_t i = 0; i + 1 < Histogram::kBucketCount; ++i) {
    BOOST_TEST_REQUIRE(Histogram::bucket_highest(i) + 1 == Histogram::bucket_lowest(i + 1));
  }
  BOOST_TEST(Histogram::bucket_index(UINT64_MAX) == Histogram::kBucketCount - 1);
  BOOST_TEST(Histogram::bucket_highest(Histogram::kBucketCount - 1) == UINT64_MAX);
}

BOOST_AUTO_TEST_CASE(every_value_falls_in_its_bucket_within_the_relative_error) {
  std::mt19937_64 engine(7);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t v = engine() >> (engine() % 64);
    const auto index = Histogram::bucket_index(v);
    BOOST_TEST_REQUIRE(Histogram::bucket_lowest(index) <= v);
    BOOST_TEST_REQUIRE(Histogram::bucket_highest(index) >= v);
    const auto width = Histogram::bucket_highest(index) - Histogram::bucket_lowest(index);
    BOOST_TEST_REQUIRE(static_cast<double>(width) <= static_cast<double>(v) / 128.0);
  }
}

BOOST_AUTO_TEST_CASE(empty_histogram_reports_zeros) {
  Histogram h;
  BOOST_TEST(h.count() == 0u);
  BOOST_TEST(h.min() == 0u);
  BOOST_TEST(h.max() == 0u);
  BOOST_TEST(h.value_at(0.5) == 0u);
  BOOST_TEST(h.mean() == 0.0);
}

BOOST_AUTO_TEST_CASE(percentiles_of_one_to_one_thousand_are_exact_below_256) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 200; ++v) h.record(v);
  BOOST_TEST(h.count() == 200u);
  BOOST_TEST(h.value_at(0.5) == 100u);
  BOOST_TEST(h.value_at(0.9) == 180u);
  BOOST_TEST(h.value_at(0.99) == 198u);
  BOOST_TEST(h.value_at(0.995) == 199u);
  BOOST_TEST(h.value_at(1.0) == 200u);
  BOOST_TEST(h.value_at(0.0) == 1u);
  BOOST_TEST(h.mean() == 100.5);
}

BOOST_AUTO_TEST_CASE(percentile_rank_rounds_up_but_not_past_exact_ranks) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 1000; ++v) h.record(v);
  // 0.999 * 1000 = 999 exactly: the 999th value, not the 1000th. Values above 255 are reported
  // as their bucket's highest value, so allow the bucket width.
  const auto p999 = h.value_at(0.999);
  BOOST_TEST(p999 >= 999u);
  BOOST_TEST(p999 < 1000u + 8u);
  BOOST_TEST(h.value_at(1.0) == 1000u);
}

BOOST_AUTO_TEST_CASE(large_values_are_reported_within_the_error_and_clamped_to_max) {
  Histogram h;
  h.record(1'000'000'000);                        // 1 s in ns
  BOOST_TEST(h.value_at(0.5) == 1'000'000'000u);  // clamped to max: exact for a single value
  h.record(2'000'000);
  const auto p50 = h.value_at(0.5);
  BOOST_TEST(p50 >= 2'000'000u);
  BOOST_TEST(static_cast<double>(p50) <= 2'000'000 * (1 + 1.0 / 128));
}

BOOST_AUTO_TEST_CASE(record_with_count_equals_repeated_records) {
  Histogram a, b;
  a.record(12345, 10);
  for (int i = 0; i < 10; ++i) b.record(12345);
  BOOST_TEST(a.count() == b.count());
  BOOST_TEST(a.value_at(0.5) == b.value_at(0.5));
  BOOST_TEST(a.mean() == b.mean());
  a.record(5, 0);  // zero count: no effect at all
  BOOST_TEST(a.min() == 12345u);
}

BOOST_AUTO_TEST_CASE(merge_equals_recording_everything_in_one) {
  std::mt19937_64 engine(11);
  Histogram a, b, all;
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t v = engine() % 10'000'000;
    (i % 3 == 0 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  BOOST_TEST(a.count() == all.count());
  BOOST_TEST(a.min() == all.min());
  BOOST_TEST(a.max() == all.max());
  BOOST_TEST(a.mean() == all.mean(), boost::test_tools::tolerance(1e-9));
  for (double q : {0.1, 0.5, 0.9, 0.99, 0.999}) BOOST_TEST(a.value_at(q) == all.value_at(q));
  Histogram empty;
  a.merge(empty);
  BOOST_TEST(a.count() == all.count());
  empty.merge(a);
  BOOST_TEST(empty.min() == all.min());
}

BOOST_AUTO_TEST_CASE(reset_forgets_everything) {
  Histogram h;
  h.record(77, 3);
  h.reset();
  BOOST_TEST(h.count() == 0u);
  BOOST_TEST(h.max() == 0u);
  h.record(5);
  BOOST_TEST(h.min() == 5u);
  BOOST_TEST(h.value_at(0.99) == 5u);
}

BOOST_AUTO_TEST_CASE(percentiles_are_monotonic) {
  std::mt19937_64 engine(3);
  Histogram h;
  for (int i = 0; i < 10000; ++i) h.record(engine() % 100'000'000);
  std::uint64_t previous = 0;
  for (int i = 0; i <= 1000; ++i) {
    const auto v = h.value_at(i / 1000.0);
    BOOST_TEST_REQUIRE(v >= previous);
    previous = v;
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // histogram_test
