#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "support/process.hpp"
#include "timeline.hpp"
#include "whatif/what_if.hpp"

using namespace std::chrono;
using namespace wg;
using namespace wg::whatif;

namespace {

// Lines as the gateway's access log writes them (accesslog::append_line).
std::string widget_line(const std::string& time, const std::string& cache = "hit",
                        unsigned status = 200) {
  return R"({"time":")" + time + R"(","client":"127.0.0.1","method":"GET","route":"widget",)" +
         R"("widget":"w1","status":)" + std::to_string(status) + R"(,"cache":")" + cache +
         R"(","counts":{"total":310,"reviewAmount":{"yaSprav":310},"sources":["yaSprav"],)" +
         R"("consistent":true},"upstream_ms":null,"bytes":10,"duration_ms":0.100,)" +
         R"("trace_id":null})";
}

std::string reviews_line(const std::string& time, unsigned limit, unsigned skip,
                         const std::string& extra = "") {
  return R"({"time":")" + time + R"(","client":"127.0.0.1","method":"GET","route":"reviews",)" +
         R"("widget":"w1","status":200,"cache":"derived","limit":)" + std::to_string(limit) +
         R"(,"skip":)" + std::to_string(skip) + R"(,"type":null)" + extra +
         R"(,"upstream_ms":null,"bytes":10,"duration_ms":0.100,"trace_id":null})";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(what_if_test)

BOOST_AUTO_TEST_CASE(the_log_time_is_read_back_exactly) {
  const auto t = parse_log_time("2030-01-02T05:06:07.089Z");
  BOOST_REQUIRE(t.has_value());
  BOOST_TEST(unix_millis(*t) == unix_millis(WallTime(sys_days(year(2030) / January / day(2))) +
                                            hours(5) + minutes(6) + seconds(7) + milliseconds(89)));
  for (std::string_view bad : {"", "2030-01-02 05:06:07.089Z", "2030-13-02T05:06:07.089Z",
                               "2030-01-02T05:06:07Z", "2030-02-30T05:06:07.089Z"}) {
    BOOST_TEST(!parse_log_time(bad).has_value(), bad);
  }
}

BOOST_AUTO_TEST_CASE(lines_are_taken_skipped_or_unreadable) {
  LogLine w = read_line(widget_line("2030-01-02T05:00:00.000Z"));
  BOOST_TEST((w.kind == LogLine::Kind::api));
  BOOST_TEST((w.request.request.endpoint == api::Endpoint::widget));
  BOOST_TEST(w.request.request.widget_id == "w1");
  BOOST_REQUIRE(w.request.counts.has_value());
  BOOST_TEST(w.request.counts->total_review_amount == 310u);

  LogLine r = read_line(reviews_line("2030-01-02T05:00:00.000Z", 20, 40));
  BOOST_TEST((r.kind == LogLine::Kind::api));
  BOOST_TEST(r.request.request.query.limit == 20u);
  BOOST_TEST(r.request.request.query.skip == 40u);
  BOOST_TEST(!r.request.request.query.type.has_value());

  // An unknown widget upstream answered (cached), and errors or refusals (skipped).
  LogLine unknown = read_line(widget_line("2030-01-02T05:00:00.000Z", "miss", 404));
  BOOST_TEST((unknown.kind == LogLine::Kind::api));
  BOOST_TEST(unknown.request.unknown_widget);
  BOOST_TEST((read_line(widget_line("2030-01-02T05:00:00.000Z", "none", 400)).kind ==
              LogLine::Kind::skipped));
  BOOST_TEST((read_line(widget_line("2030-01-02T05:00:00.000Z", "none", 503)).kind ==
              LogLine::Kind::skipped));
  // A reviews line without the query: a log from an earlier version.
  std::string old = reviews_line("2030-01-02T05:00:00.000Z", 20, 0);
  old.erase(old.find(",\"limit\""), std::string(R"(,"limit":20,"skip":0,"type":null)").size());
  BOOST_TEST((read_line(old).kind == LogLine::Kind::unreadable));
  BOOST_TEST((read_line("not json").kind == LogLine::Kind::unreadable));
  BOOST_TEST((read_line(R"({"time":"2030-01-02T05:00:00.000Z","route":"healthz","status":200,)"
                        R"("cache":"none"})")
                  .kind == LogLine::Kind::skipped));
}

BOOST_AUTO_TEST_CASE(logs_of_two_instances_are_merged_in_time_order_and_replayed) {
  wg::test::TempDir dir;
  // Instance a: the widget at 05:00 and 06:00; instance b: its pages in between.
  const std::string a =
      dir.write("a.log", widget_line("2030-01-02T05:00:00.000Z") + "\n" +
                             widget_line("2030-01-02T06:00:00.000Z") + "\n{\"route\":\"other\"}\n");
  const std::string b =
      dir.write("b.log", reviews_line("2030-01-02T05:10:00.000Z", 20, 0) + "\n" +
                             reviews_line("2030-01-02T05:20:00.000Z", 20, 290) + "\n" +
                             reviews_line("2030-01-02T05:30:00.000Z", 20, 400) + "\n");
  std::ostringstream out, err;
  BOOST_TEST(run_what_if({a, b}, wg::whatif::test::hourly(), out, err) == 0, err.str());
  const std::string json = out.str();
  BOOST_TEST(json.find(R"("requests":5,"upstream_requests":4,)") != std::string::npos, json);
  BOOST_TEST(json.find(R"("lines_unreadable":1,"files":2})") != std::string::npos, json);
  BOOST_TEST(json.find(R"("from":"2030-01-02T05:00:00.000Z","to":"2030-01-02T06:00:00.000Z")") !=
                 std::string::npos,
             json);
}

BOOST_AUTO_TEST_CASE(a_sampled_log_is_refused_and_says_why) {
  wg::test::TempDir dir;
  const std::string log = dir.write(
      "s.log", reviews_line("2030-01-02T05:10:00.000Z", 20, 0, R"(,"sample":0.1)") + "\n");
  std::ostringstream out, err;
  BOOST_TEST(run_what_if({log}, wg::whatif::test::hourly(), out, err) == 2);
  BOOST_TEST(err.str().find("sampled (log.sample 0.1)") != std::string::npos, err.str());
  BOOST_TEST(out.str().empty());
  BOOST_TEST(run_what_if({dir.file("missing.log")}, wg::whatif::test::hourly(), out, err) == 1);
}

BOOST_AUTO_TEST_SUITE_END()
