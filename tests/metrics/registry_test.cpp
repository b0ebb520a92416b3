#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "widget_gateway/metrics/registry.hpp"

using namespace wg::metrics;

BOOST_AUTO_TEST_SUITE(registry_test)

BOOST_AUTO_TEST_SUITE(render)

BOOST_AUTO_TEST_CASE(counters_and_gauges_render_exactly) {
  Registry registry;
  Counter& get = registry.counter("x_requests_total", "Requests.", {{"method", "GET"}});
  Counter& head = registry.counter("x_requests_total", "Requests.", {{"method", "HEAD"}});
  Gauge& up = registry.gauge("x_up", "Up or not.");
  get.inc();
  get.inc(41);
  head.inc(0);
  up.set(1);
  up.add(0.5);
  registry.callback_gauge("x_bytes", "Bytes held.", {{"tier", "l1"}}, [] { return 1024.0; });

  BOOST_TEST(registry.render() ==
             "# HELP x_requests_total Requests.\n"
             "# TYPE x_requests_total counter\n"
             "x_requests_total{method=\"GET\"} 42\n"
             "x_requests_total{method=\"HEAD\"} 0\n"
             "# HELP x_up Up or not.\n"
             "# TYPE x_up gauge\n"
             "x_up 1.5\n"
             "# HELP x_bytes Bytes held.\n"
             "# TYPE x_bytes gauge\n"
             "x_bytes{tier=\"l1\"} 1024\n");
}

BOOST_AUTO_TEST_CASE(families_keep_registration_order_when_interleaved) {
  Registry registry;
  registry.counter("a_total", "A.", {{"k", "1"}}).inc();
  registry.gauge("b", "B.").set(2);
  registry.counter("a_total", "A.", {{"k", "2"}}).inc(3);
  BOOST_TEST(registry.render() ==
             "# HELP a_total A.\n# TYPE a_total counter\na_total{k=\"1\"} 1\na_total{k=\"2\"} 3\n"
             "# HELP b B.\n# TYPE b gauge\nb 2\n");
}

BOOST_AUTO_TEST_CASE(label_values_and_help_are_escaped) {
  Registry registry;
  registry.counter("e_total", "Help with \\ and\nnewline \"quoted\".",
                   {{"v", "back\\slash \"quote\"\nline"}, {"w", "plain"}});
  BOOST_TEST(registry.render() ==
             "# HELP e_total Help with \\\\ and\\nnewline \"quoted\".\n"
             "# TYPE e_total counter\n"
             "e_total{v=\"back\\\\slash \\\"quote\\\"\\nline\",w=\"plain\"} 0\n");
}

BOOST_AUTO_TEST_CASE(special_values) {
  Registry registry;
  registry.callback_gauge("nan_value", "N.", {}, [] { return std::nan(""); });
  registry.callback_gauge("inf_value", "I.", {},
                          [] { return std::numeric_limits<double>::infinity(); });
  registry.callback_gauge("ninf_value", "I.", {},
                          [] { return -std::numeric_limits<double>::infinity(); });
  registry.callback_gauge("small_value", "S.", {}, [] { return 0.000125; });
  registry.callback_counter("cb_total", "C.", {}, [] { return 7.0; });
  const std::string text = registry.render();
  BOOST_TEST(text.find("\nnan_value NaN\n") != std::string::npos);
  BOOST_TEST(text.find("\ninf_value +Inf\n") != std::string::npos);
  BOOST_TEST(text.find("\nninf_value -Inf\n") != std::string::npos);
  BOOST_TEST(text.find("\nsmall_value 0.000125\n") != std::string::npos);
  BOOST_TEST(text.find("# TYPE cb_total counter\ncb_total 7\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(zero_series_hidden_when_asked) {
  Registry registry;
  Counter& used = registry.counter("h_total", "H.", {{"k", "a"}}, Exposition::when_nonzero);
  registry.counter("h_total", "H.", {{"k", "b"}}, Exposition::when_nonzero);
  BOOST_TEST(registry.render() == "# HELP h_total H.\n# TYPE h_total counter\n");
  used.inc();
  BOOST_TEST(registry.render() ==
             "# HELP h_total H.\n# TYPE h_total counter\nh_total{k=\"a\"} 1\n");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(registration)

BOOST_AUTO_TEST_CASE(bugs_are_rejected) {
  Registry registry;
  registry.counter("dup_total", "D.", {{"k", "v"}});
  BOOST_CHECK_THROW(registry.counter("dup_total", "D.", {{"k", "v"}}), std::logic_error);
  BOOST_CHECK_THROW(registry.gauge("dup_total", "D."), std::logic_error);
  BOOST_CHECK_THROW(registry.counter("bad-name", "B."), std::invalid_argument);
  BOOST_CHECK_THROW(registry.counter("9lives", "B."), std::invalid_argument);
  BOOST_CHECK_THROW(registry.counter("ok_total", "B.", {{"__reserved", "x"}}),
                    std::invalid_argument);
  BOOST_CHECK_THROW(registry.counter("ok_total", "B.", {{"a:b", "x"}}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.histogram("lat_seconds", "L.", {0.1}, {{"le", "x"}}),
                    std::invalid_argument);
  BOOST_CHECK_THROW(registry.callback_gauge("cb", "C.", {}, {}), std::invalid_argument);
  // The failed registrations left nothing behind.
  BOOST_TEST(registry.render() ==
             "# HELP dup_total D.\n# TYPE dup_total counter\ndup_total{k=\"v\"} 0\n");
}

BOOST_AUTO_TEST_CASE(histogram_bounds_are_checked) {
  BOOST_CHECK_THROW(Histogram({0.2, 0.1}), std::invalid_argument);
  BOOST_CHECK_THROW(Histogram({0.1, 0.1}), std::invalid_argument);
  BOOST_CHECK_THROW(Histogram({std::nan("")}), std::invalid_argument);
  Histogram with_inf({0.1, std::numeric_limits<double>::infinity()});
  BOOST_TEST(with_inf.upper_bounds().size() == 1u);
  Histogram only_inf({});
  only_inf.observe(3);
  BOOST_TEST(only_inf.snapshot().count == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(histogram)

BOOST_AUTO_TEST_CASE(buckets_are_cumulative_with_sum_and_count) {
  Histogram h({0.01, 0.1, 1});
  for (double v : {0.005, 0.01, 0.05, 0.5, 0.5, 2.0}) h.observe(v);
  h.observe(std::nan(""));  // ignored
  const Histogram::Snapshot s = h.snapshot();
  BOOST_TEST(s.cumulative_counts == (std::vector<std::uint64_t>{2, 3, 5, 6}),
             boost::test_tools::per_element());
  BOOST_TEST(s.count == 6u);
  BOOST_TEST(s.sum == 3.065, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(renders_bucket_sum_count) {
  Registry registry;
  Histogram& h = registry.histogram("d_seconds", "Durations.", {0.005, 0.5, 1}, {{"route", "w"}});
  h.observe(0.25);
  h.observe(0.75);
  h.observe(4);
  BOOST_TEST(registry.render() ==
             "# HELP d_seconds Durations.\n"
             "# TYPE d_seconds histogram\n"
             "d_seconds_bucket{route=\"w\",le=\"0.005\"} 0\n"
             "d_seconds_bucket{route=\"w\",le=\"0.5\"} 1\n"
             "d_seconds_bucket{route=\"w\",le=\"1\"} 2\n"
             "d_seconds_bucket{route=\"w\",le=\"+Inf\"} 3\n"
             "d_seconds_sum{route=\"w\"} 5\n"
             "d_seconds_count{route=\"w\"} 3\n");
}

BOOST_AUTO_TEST_CASE(unlabelled_histogram) {
  Registry registry;
  registry.histogram("u_seconds", "U.", {1}).observe(0.5);
  BOOST_TEST(registry.render() ==
             "# HELP u_seconds U.\n# TYPE u_seconds histogram\n"
             "u_seconds_bucket{le=\"1\"} 1\nu_seconds_bucket{le=\"+Inf\"} 1\n"
             "u_seconds_sum 0.5\nu_seconds_count 1\n");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(concurrency)

BOOST_AUTO_TEST_CASE(increments_from_four_threads_sum_exactly) {
  Registry registry;
  Counter& counter = registry.counter("c_total", "C.");
  Histogram& histogram = registry.histogram("c_seconds", "C.", {0.5});
  Gauge& gauge = registry.gauge("c_level", "C.");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        counter.inc();
        histogram.observe(t % 2 == 0 ? 0.25 : 1.0);
        gauge.add(1);
      }
    });
  }
  // Scrapes while writers run must not disturb them.
  for (int i = 0; i < 10; ++i) (void)registry.render();
  for (auto& t : threads) t.join();

  BOOST_TEST(counter.value() == std::uint64_t{kThreads} * kPerThread);
  const Histogram::Snapshot s = histogram.snapshot();
  BOOST_TEST(s.count == std::uint64_t{kThreads} * kPerThread);
  BOOST_TEST(s.cumulative_counts[0] == std::uint64_t{kThreads / 2} * kPerThread);
  BOOST_TEST(s.sum == (kThreads / 2) * kPerThread * 1.25);  // exact in binary
  BOOST_TEST(gauge.value() == double{kThreads} * kPerThread);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // registry_test
