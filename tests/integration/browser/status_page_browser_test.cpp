// The status page in headless Chromium (status_page_check.js): it loads with no console error
// and no CSP violation, refuses a wrong token and shows nothing, shows the data once the right
// token is typed (the token kept in session storage, never in a URL), purges a widget through
// a confirmation, hard then soft (its entry is gone from L1 and Redis afterwards), renders ids
// as text, and fits a phone's width. The screenshot it takes is the one under docs/.
#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include <filesystem>

#include "integration/browser/browser_script.hpp"
#include "integration/stack.hpp"
#include "support/paths.hpp"

using namespace wg::test;

namespace {

bool cached_anywhere(std::uint16_t admin_port, const std::string& widget) {
  const auto entry = http_get(admin_port, "/admin/entry?widget=" + widget, kAdminAuth);
  BOOST_REQUIRE_EQUAL(entry.status, 200);
  return entry.body.find("\"cached\":true") != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(status_page_browser_test)

BOOST_AUTO_TEST_CASE(an_operator_reads_the_status_and_purges_a_widget) {
  require_browser_tools();
  RedisServer redis;
  Stub stub;
  const auto ids = stub.widgets(3);
  Gateway gateway(stub.base_url(), redis.url(),
                  {"--admin-token", "s3cret", "--quota-limit", "3000"});
  // Some traffic to show: three widgets, the first the costliest (its data and two windows of
  // its 700 reviews), and hits on each.
  BOOST_TEST(gateway.get(reviews_path(ids[0].id, "limit=300")).status == 200);
  BOOST_TEST(gateway.get(reviews_path(ids[0].id, "limit=300&skip=300")).status == 200);
  for (const auto& w : ids) {
    for (int i = 0; i < 5; ++i) BOOST_TEST(gateway.get(widget_path(w.id)).status == 200);
  }
  BOOST_TEST(cached_anywhere(gateway.admin_port(), ids[1].id));

  const std::string screenshot = browser_dir() + "/status-page.png";
  std::filesystem::remove(screenshot);
  const std::string json =
      run_browser_script("status_page_check.js",
                         {std::to_string(gateway.admin_port()), "s3cret", ids[1].id, screenshot},
                         "STATUS_PAGE_RESULT ");
  simdjson::dom::parser parser;
  const Json result = parser.parse(json);

  BOOST_TEST(integer(result, "pageStatus") == 200);
  BOOST_TEST(describe(result["consoleErrors"]) == "[]");
  BOOST_TEST(flag(result, "boardHiddenAtLoad"));
  // Refused: the wrong token is not kept, nothing is shown.
  BOOST_TEST(flag(result, "boardHiddenAfterWrongToken"));
  BOOST_TEST(integer(result, "storedAfterWrongToken") == 0);
  BOOST_TEST(integer(result, "refusedLoads") >= 1);
  // With the token: the data.
  BOOST_TEST(flag(result, "refusedHiddenWithData"));
  BOOST_TEST(flag(result, "tokenInStorage"));
  const Json shown = result["shown"];
  BOOST_TEST(str(shown, "quota").find("of 3,000") != std::string::npos, describe(shown));
  BOOST_TEST(str(shown, "quota").find("projected ") != std::string::npos, describe(shown));
  BOOST_TEST(str(shown, "quota").find("projected –") == std::string::npos, describe(shown));
  BOOST_TEST(str(shown, "redis") == "up");
  BOOST_TEST(str(shown, "circuit") == "closed");
  BOOST_TEST(str(shown, "hitRatio") != "");
  BOOST_TEST(integer(shown, "workers") == 2);
  BOOST_TEST(integer(shown, "chartLines") == 2);
  const std::string oldest_age = str(shown, "oldestAge");  // "–" until the page fills it
  BOOST_TEST((!oldest_age.empty() && oldest_age != "–"), describe(shown));
  simdjson::dom::array top;
  BOOST_REQUIRE(shown["topIds"].get(top) == simdjson::SUCCESS);
  BOOST_REQUIRE(top.size() == 3u);
  std::string_view first;
  BOOST_REQUIRE(top.at(0).get(first) == simdjson::SUCCESS);
  BOOST_TEST(first == ids[0].id);
  // The purge went through the confirmation and took the widget everywhere.
  BOOST_TEST(str(result, "confirmNames") == ids[1].id);
  BOOST_TEST(str(result, "purgeResult") == "Purged " + ids[1].id + ".");
  BOOST_TEST(str(result, "softPurgeResult") == "Soft-purged " + ids[1].id + ".");
  BOOST_TEST(!cached_anywhere(gateway.admin_port(), ids[1].id));
  BOOST_TEST(cached_anywhere(gateway.admin_port(), ids[2].id));
  BOOST_TEST(flag(result, "markupRenderedAsText"));
  // The token never travelled in a URL; the page fits a phone.
  BOOST_TEST(!flag(result, "tokenInAnyUrl"));
  BOOST_TEST(str(result, "pageUrl").find("s3cret") == std::string::npos);
  BOOST_TEST(integer(result, "phoneOverflow") <= 0);
  BOOST_TEST(std::filesystem::file_size(screenshot) > 10000u);
}

BOOST_AUTO_TEST_SUITE_END()  // status_page_browser_test
