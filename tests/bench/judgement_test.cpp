#include <boost/test/unit_test.hpp>

// The pure parts of judging a run: load profiles (ramps), --fail-if conditions, the figures
// and warnings computed from a run's counts, the per-second series and the .hgrm export.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "wg-bench/load_profile.hpp"
#include "wg-bench/report.hpp"
#include "wg-bench/run_figures.hpp"
#include "wg-bench/scenario.hpp"
#include "wg-bench/thresholds.hpp"
#include "wg-bench/time_series.hpp"

using namespace std::chrono_literals;
using namespace wg::bench;

BOOST_AUTO_TEST_SUITE(judgement_test)

BOOST_AUTO_TEST_SUITE(load_profile)

BOOST_AUTO_TEST_CASE(a_constant_level_integrates_linearly) {
  const auto p = LoadProfile::constant(1000);
  BOOST_TEST(!p.ramped());
  BOOST_TEST(p.integral_to(2.5) == 2500.0);
  BOOST_TEST(p.time_of_integral(1500) == 1.5);
  BOOST_TEST(p.first_time_above(999, 3) == 3.0);
  BOOST_TEST(p.first_time_above(1000, 0) == LoadProfile::kNever);
}

BOOST_AUTO_TEST_CASE(a_ramp_offers_the_area_under_its_stages) {
  // 0 → 100 over 2 s (100 requests), then 100 → 300 over 1 s (200 more), then holds 300.
  const auto p = LoadProfile::ramp(0, parse_ramp("100:2s,300:1s"));
  BOOST_TEST(p.span() == 3.0);
  BOOST_TEST(p.peak() == 300.0);
  BOOST_TEST(p.level_at(1) == 50.0);
  BOOST_TEST(p.level_at(2.5) == 200.0);
  BOOST_TEST(p.integral_to(2) == 100.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(p.integral_to(3) == 300.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(p.integral_to(4) == 600.0, boost::test_tools::tolerance(1e-9));
  // The inverse: the n-th request's time, for every n, round-trips through the integral.
  for (double n = 0; n < 700; n += 7) {
    BOOST_TEST_REQUIRE(p.integral_to(p.time_of_integral(n)) == n,
                       boost::test_tools::tolerance(1e-6));
  }
  BOOST_TEST(p.time_of_integral(25) == 1.0, boost::test_tools::tolerance(1e-9));  // 25 = t²·25
}

BOOST_AUTO_TEST_CASE(a_ramp_down_to_zero_never_offers_more) {
  const auto p = LoadProfile::ramp(0, parse_ramp("10:1s,0:1s"));
  BOOST_TEST(p.integral_to(2) == 10.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(p.time_of_integral(11) == LoadProfile::kNever);
}

BOOST_AUTO_TEST_CASE(connections_join_as_the_ramp_passes_their_index) {
  // Closed loop: 0 → 4 connections over 4 s; connection i may send once the level exceeds i.
  const auto p = LoadProfile::ramp(0, parse_ramp("4:4s"));
  BOOST_TEST(p.first_time_above(0, 0) == 0.0, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(p.first_time_above(2, 0) == 2.0, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(p.level_at(p.first_time_above(2, 0)) > 2.0);
  BOOST_TEST(p.first_time_above(3, 3.5) == 3.5);
  BOOST_TEST(p.first_time_above(4, 0) == LoadProfile::kNever);
}

BOOST_AUTO_TEST_CASE(bad_ramps_are_refused) {
  for (const char* bad : {"", "100", "100:", ":1s", "x:1s", "100:0s", "-5:1s", "100:1s,"}) {
    BOOST_TEST_CONTEXT(bad) {
      BOOST_CHECK_THROW(parse_ramp(bad), ScenarioError);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// A run's result with the given counts; latencies of 1 ms each.
LoadResult result_with(std::uint64_t responses, std::uint64_t unexpected, double seconds) {
  LoadResult r;
  r.stats.requests = responses;
  r.stats.responses = responses;
  r.stats.status[200] = responses - unexpected;
  r.stats.status[404] = unexpected;
  r.stats.unexpected_status = unexpected;
  r.stats.unexpected_by_status[404] = unexpected;
  r.stats.latency.record(1'000'000, responses);
  r.stats.sends = responses;
  r.measured_seconds = seconds;
  r.elapsed_seconds = seconds;
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_figures)

BOOST_AUTO_TEST_CASE(an_open_loop_that_fell_behind_is_measured_over_the_time_it_took) {
  // 2,000 intended in 1 s, all answered, but the last answer came 4 s after the start.
  LoadResult r = result_with(2000, 0, 1);
  r.elapsed_seconds = 4;
  r.intended_requests = 2000;
  r.stats.late_sends = 1900;
  r.stats.max_lateness_ns = 3'000'000'000;
  const RunFigures f = figures_of(r, LoadMode::open);
  BOOST_TEST(f.offered_rps == 2000.0);
  BOOST_TEST(f.achieved_rps == 500.0);
  BOOST_TEST(f.rate_ratio == 0.25);
  const Assessment a = assess(f, r.stats);
  BOOST_TEST(static_cast<int>(a.status) == 0);  // a warning, not a failure, unless --fail-if
  BOOST_TEST_REQUIRE(a.warnings.size() == 2u);
  BOOST_TEST(a.warnings[0].find("achieved 500 req/s of the 2000 offered") != std::string::npos);
  BOOST_TEST(a.warnings[1].find("1900 of 2000 requests (95.0 %)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_closed_loop_rate_is_over_the_measured_period) {
  LoadResult r = result_with(3000, 0, 3);
  r.elapsed_seconds = 3.2;
  const RunFigures f = figures_of(r, LoadMode::closed);
  BOOST_TEST(f.achieved_rps == 1000.0);
  BOOST_TEST(f.offered_rps == 0.0);
  BOOST_TEST(assess(f, r.stats).warnings.empty());
}

BOOST_AUTO_TEST_CASE(exit_statuses_follow_the_worst_failure) {
  LoadResult all_404 = result_with(50, 50, 1);
  auto a = assess(figures_of(all_404, LoadMode::closed), all_404.stats);
  BOOST_TEST(static_cast<int>(a.status) == static_cast<int>(ExitStatus::no_valid_answer));
  BOOST_TEST(a.warnings.at(0).find("404 x 50") != std::string::npos);

  LoadResult refused = result_with(50, 50, 1);
  refused.stats.record_error(ErrorKind::connect, true, 5);
  a = assess(figures_of(refused, LoadMode::closed), refused.stats);
  BOOST_TEST(static_cast<int>(a.status) == static_cast<int>(ExitStatus::connection_failed));

  LoadResult unsent = result_with(10, 0, 1);
  unsent.intended_requests = 20;
  unsent.stats.record_unsent(10);
  a = assess(figures_of(unsent, LoadMode::open), unsent.stats);
  BOOST_TEST(static_cast<int>(a.status) == 0);
  bool warned = false;
  for (const auto& w : a.warnings) warned = warned || w.find("never sent") != std::string::npos;
  BOOST_TEST(warned);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fail_if)

BOOST_AUTO_TEST_CASE(conditions_parse_with_units_and_shares) {
  const auto c = parse_fail_if("p99>5ms, errors>0,rate<0.95,p99.9>=500us,late>1%,rps<=100");
  BOOST_TEST_REQUIRE(c.size() == 6u);
  BOOST_TEST((c[0].metric == Condition::Metric::p99));
  BOOST_TEST(c[0].value == 5e6);
  BOOST_TEST((c[1].metric == Condition::Metric::errors));
  BOOST_TEST(!c[1].share);
  BOOST_TEST((c[2].op == Condition::Op::less));
  BOOST_TEST(c[2].needs_open_loop());
  BOOST_TEST((c[3].metric == Condition::Metric::p999));
  BOOST_TEST((c[3].op == Condition::Op::greater_equal));
  BOOST_TEST(c[3].value == 5e5);
  BOOST_TEST(c[4].share);
  BOOST_TEST(c[4].value == 0.01);
  BOOST_TEST((c[5].op == Condition::Op::less_equal));
  BOOST_TEST(parse_fail_if("max>2")[0].value == 2e6);  // milliseconds by default
  BOOST_TEST(parse_fail_if("p50>1s")[0].value == 1e9);
}

BOOST_AUTO_TEST_CASE(bad_conditions_are_refused_naming_them) {
  for (const char* bad : {"", "p99", "p98>1ms", "p99>fast", "p99>5%", "rps>10ms", "errors>-1",
                          "errors>1,", "rate=0.9"}) {
    BOOST_TEST_CONTEXT(bad) {
      BOOST_CHECK_THROW(parse_fail_if(bad), ScenarioError);
    }
  }
  try {
    parse_fail_if("p99>1ms,p98>1ms");
  } catch (const ScenarioError& e) {
    BOOST_TEST(std::string(e.what()).find("\"p98>1ms\"") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(conditions_hold_against_the_figures) {
  LoadResult r = result_with(1000, 10, 1);  // 1 ms each, 10 unexpected statuses
  r.stats.record_error(ErrorKind::timeout, true, 5);
  r.intended_requests = 2000;
  const RunFigures f = figures_of(r, LoadMode::open);
  const auto held = [&](const char* text) { return holds(parse_fail_if(text)[0], f); };
  BOOST_TEST(held("p99>0.5ms"));
  BOOST_TEST(!held("p99>2ms"));
  BOOST_TEST(held("errors>14"));  // 5 without an answer + 10 unexpected
  BOOST_TEST(!held("errors>15"));
  BOOST_TEST(held("errors>1%"));  // 15 of 1005
  BOOST_TEST(!held("errors>2%"));
  BOOST_TEST(held("unexpected>=10"));
  BOOST_TEST(held("rate<0.95"));  // 1000 of 2000
  BOOST_TEST(held("rps<1001"));
  const auto messages = crossed(parse_fail_if("p99>0.5ms,rate<0.95,errors>100"), f);
  BOOST_TEST_REQUIRE(messages.size() == 2u);
  BOOST_TEST(messages[0] == "p99>0.5ms (measured 1.000 ms)");
  BOOST_TEST(messages[1].find("rate<0.95 (measured 0.500)") == 0u);
}

// What the summary calls errors is what --fail-if errors counts: both transport errors and
// unexpected statuses, the latter broken down by code.
BOOST_AUTO_TEST_CASE(the_summary_counts_errors_as_fail_if_does_and_names_the_codes) {
  LoadResult r = result_with(1000, 30, 1);
  r.stats.unexpected_by_status[404] = 20;
  r.stats.unexpected_by_status[429] = 10;
  r.stats.record_error(ErrorKind::timeout, true, 5);
  const RunFigures f = figures_of(r, LoadMode::closed);
  BOOST_TEST(holds(parse_fail_if("errors>34")[0], f));
  BOOST_TEST(!holds(parse_fail_if("errors>35")[0], f));
  ReportContext context;
  context.label = "gateway";
  const std::string summary = human_summary(context, r, f, Verdict{});
  BOOST_TEST(summary.find("; errors 35 (no answer 5, unexpected status 30: 404 x 20, 429 x 10)") !=
                 std::string::npos,
             summary);
  const Assessment a = assess(f, r.stats);
  bool named = false;
  for (const auto& w : a.warnings) {
    named = named || w == "30 answers had a status the request did not expect (404 x 20, 429 x 10)";
  }
  BOOST_TEST(named);
  const std::string json = to_json(context, r, f, Verdict{});
  BOOST_TEST(json.find("\"unexpected_by_status\": {\"404\": 20, \"429\": 10}") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(status_counts_lists_the_most_frequent_codes_first) {
  std::array<std::uint64_t, 600> counts{};
  BOOST_TEST(status_counts(counts).empty());
  counts[200] = 5;
  counts[503] = 9;
  counts[429] = 1;
  BOOST_TEST(status_counts(counts) == "503 x 9, 200 x 5, 429 x 1");
  BOOST_TEST(status_counts(counts, 2) == "503 x 9, 200 x 5, ...");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(series_and_exports)

BOOST_AUTO_TEST_CASE(the_series_counts_by_second_and_stays_bounded) {
  const wg::SteadyTime start{1000s};
  TimeSeries a(start), b(start);
  a.at(start + 200ms)->responses += 2;
  b.at(start + 2500ms)->responses += 3;
  BOOST_TEST(a.at(start - 1ms) == nullptr);
  a.merge(b);
  BOOST_TEST_REQUIRE(a.size() == 3u);
  BOOST_TEST(a.second(0).responses == 2u);
  BOOST_TEST(a.second(1).responses == 0u);
  BOOST_TEST(a.second(2).responses == 3u);
  BOOST_TEST(!a.truncated());
  BOOST_TEST(a.at(start + std::chrono::seconds(TimeSeries::kMaxSeconds)) == nullptr);
  BOOST_TEST(a.truncated());
  BOOST_TEST(a.size() == 3u);
}

// --slow-above: each second and minute of the JSON series counts the answers that took longer
// (strictly) than the threshold; without it the field is absent and nothing is counted.
BOOST_AUTO_TEST_CASE(slow_answers_are_counted_per_second_and_minute) {
  const wg::SteadyTime start{1000s};
  const std::uint64_t ten_ms = 10'000'000;
  TimeSeries a(start), b(start);
  a.at(start + 100ms)->record_answer(2'000'000, ten_ms);   // fast
  a.at(start + 200ms)->record_answer(ten_ms, ten_ms);      // at the threshold: not slow
  a.at(start + 300ms)->record_answer(25'000'000, ten_ms);  // slow
  b.at(start + 400ms)->record_answer(30'000'000, ten_ms);  // slow, another thread's
  b.at(start + 61s)->record_answer(40'000'000, ten_ms);    // slow, in the second minute
  b.at(start + 61s)->record_answer(40'000'000, 0);         // not counted without a threshold
  a.merge(b);
  BOOST_TEST_REQUIRE(a.size() == 62u);
  BOOST_TEST(a.second(0).responses == 4u);
  BOOST_TEST(a.second(0).slow == 2u);
  BOOST_TEST(a.second(61).responses == 2u);
  BOOST_TEST(a.second(61).slow == 1u);

  LoadResult r = result_with(6, 0, 62);
  r.stats.series = a;
  ReportContext c;
  c.label = "gateway";
  c.load.slow_above = 10ms;
  const RunFigures f = figures_of(r, LoadMode::closed);
  const std::string json = to_json(c, r, f, Verdict{});
  BOOST_TEST(json.find("\"slow_above_us\": 10000.0") != std::string::npos, json);
  BOOST_TEST(json.find("{\"t\": 0, \"sent\": 0, \"late\": 0, \"responses\": 4, \"errors\": 0, "
                       "\"slow\": 2, ") != std::string::npos);
  BOOST_TEST(json.find("{\"t\": 1, \"sent\": 0, \"late\": 0, \"responses\": 0, \"errors\": 0, "
                       "\"slow\": 0, ") != std::string::npos);
  BOOST_TEST(json.find("{\"minute\": 0, \"seconds\": 60, \"responses\": 4, \"errors\": 0, "
                       "\"slow\": 2, ") != std::string::npos);
  BOOST_TEST(json.find("{\"minute\": 1, \"seconds\": 2, \"responses\": 2, \"errors\": 0, "
                       "\"slow\": 1, ") != std::string::npos);

  c.load.slow_above = 0ms;  // not asked for: no "slow" anywhere
  const std::string plain = to_json(c, r, f, Verdict{});
  BOOST_TEST(plain.find("\"slow_above_us\": null") != std::string::npos);
  BOOST_TEST(plain.find("\"slow\":") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(roles_are_merged_and_reported_apart) {
  RunStats a, b;
  a.roles[static_cast<std::size_t>(Role::visitor)].responses = 3;
  a.roles[static_cast<std::size_t>(Role::visitor)].requests = 3;
  a.roles[static_cast<std::size_t>(Role::visitor)].latency.record(1'000'000, 3);  // 1 ms
  b.roles[static_cast<std::size_t>(Role::walker)].requests = 3;
  b.roles[static_cast<std::size_t>(Role::walker)].responses = 2;
  b.roles[static_cast<std::size_t>(Role::walker)].errors = 1;
  b.roles[static_cast<std::size_t>(Role::walker)].unexpected_status = 1;
  b.roles[static_cast<std::size_t>(Role::walker)].latency.record(20'000'000, 2);  // 20 ms
  a.merge(b);
  const RoleStats& walker = a.roles[static_cast<std::size_t>(Role::walker)];
  BOOST_TEST(walker.requests == 3u);
  BOOST_TEST(walker.responses == 2u);
  BOOST_TEST(walker.errors == 1u);
  BOOST_TEST(walker.unexpected_status == 1u);
  BOOST_TEST(walker.latency.count() == 2u);

  LoadResult r = result_with(5, 0, 1.0);
  r.stats.roles = a.roles;
  ReportContext c;
  c.label = "gateway";
  const RunFigures f = figures_of(r, LoadMode::closed);
  const Verdict v;
  const std::string json = to_json(c, r, f, v);
  BOOST_TEST(json.find("\"roles\": {") != std::string::npos);
  BOOST_TEST(json.find("\"visitors\": {\"requests\": 3, \"responses\": 3, \"errors\": 0") !=
             std::string::npos);
  BOOST_TEST(json.find("\"walker\": {\"requests\": 3, \"responses\": 2, \"errors\": 1, "
                       "\"unexpected_status\": 1") != std::string::npos);

  // The TSV line ends with the visitors' p99, the walker's answers and its p99 (µs).
  const std::string header = tsv_header();
  BOOST_TEST(header.ends_with("\texit_status\tvisitors_p99_us\twalker_responses\twalker_p99_us\n"));
  const std::string line = to_tsv_line(c, r, f, v);
  BOOST_TEST(std::count(line.begin(), line.end(), '\t') ==
             std::count(header.begin(), header.end(), '\t'));
  const auto fields_from = line.rfind('\t', line.rfind('\t', line.rfind('\t') - 1) - 1);
  const std::string tail = line.substr(fields_from);
  BOOST_TEST(tail.starts_with("\t100"));                 // 1 ms, the top of its bucket
  BOOST_TEST(tail.find("\t2\t2") != std::string::npos);  // 2 answers, p99 near 20 ms
  BOOST_TEST(human_summary(c, r, f, v).find("  walker: 2 answers") != std::string::npos);

  // Without a walker: "-" for its p99, and no per-role lines in the summary.
  LoadResult plain = result_with(5, 0, 1.0);
  const std::string plain_line = to_tsv_line(c, plain, figures_of(plain, LoadMode::closed), v);
  BOOST_TEST(plain_line.ends_with("\t-\t0\t-\n"));
  BOOST_TEST(human_summary(c, plain, figures_of(plain, LoadMode::closed), v).find("walker:") ==
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(hgrm_lists_rising_percentiles_up_to_the_total) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 10000; ++v) h.record(v * 1000);  // 1 us .. 10 ms
  const std::string text = to_hgrm(h);
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  BOOST_TEST(line.find("Value") != std::string::npos);
  std::getline(lines, line);
  BOOST_TEST(line.empty());
  double last_value = -1, last_percentile = -1;
  std::uint64_t last_count = 0;
  int rows = 0;
  while (std::getline(lines, line) && !line.starts_with("#")) {
    std::istringstream fields(line);
    double value = 0, percentile = 0;
    std::uint64_t count = 0;
    fields >> value >> percentile >> count;
    BOOST_TEST_REQUIRE(value >= last_value);
    BOOST_TEST_REQUIRE(percentile > last_percentile);
    BOOST_TEST_REQUIRE(count >= last_count);
    last_value = value;
    last_percentile = percentile;
    last_count = count;
    ++rows;
  }
  BOOST_TEST(rows > 20);
  BOOST_TEST(last_percentile == 1.0);
  BOOST_TEST(last_count == 10000u);
  BOOST_TEST(last_value == 10.0);  // ms: the exact maximum
  BOOST_TEST(text.find("#[Max     =       10.000, Total count    =        10000]") !=
             std::string::npos);
  // An empty histogram still has the header and footer, no rows.
  BOOST_TEST(to_hgrm(Histogram{}).find("Total count    =            0") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // judgement_test
