#include "integration/browser/browser_script.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "support/process.hpp"
#include "support/paths.hpp"

namespace wg::test {

std::string str(Json object, const char* key) {
  std::string_view value;
  if (object[key].get(value) != simdjson::SUCCESS) return "";
  return std::string(value);
}
bool flag(Json object, const char* key) {
  bool value = false;
  return object[key].get(value) == simdjson::SUCCESS && value;
}
std::int64_t integer(Json object, const char* key) {
  std::int64_t value = -1;
  if (object[key].get(value) != simdjson::SUCCESS) return -1;
  return value;
}
std::string describe(Json fetch) {
  simdjson::dom::element element;
  if (fetch.get(element) != simdjson::SUCCESS) return "(missing)";
  return simdjson::minify(element);
}

// Fails the test case, with the reason, when the browser machinery cannot run here.
void require_browser_tools() {
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    BOOST_FAIL(
        "`node` (Node.js) is not on PATH: it runs playwright-core "
        "(deploy/install-deps.sh --test-tools installs it)");
  }
  if (!std::ifstream(browser_dir() + "/node_modules/playwright-core/package.json")) {
    BOOST_FAIL("playwright-core is not installed in "
               << browser_dir() << ": run the ctest fixture integration_browser_npm_setup (npm ci)");
  }
  if (::access(chromium_path().c_str(), X_OK) != 0) {
    BOOST_FAIL("Chromium is not at "
               << chromium_path()
               << " (deploy/install-deps.sh --test-tools installs it; -DWG_CHROMIUM=PATH names "
                  "another)");
  }
}

// Runs a browser script (node SCRIPT CHROMIUM ARGS...) to its end and returns the JSON it
// printed after `mark`; fails the test case, with the script's output, when there is none,
// when it does not parse, when it reports an error, or when the script failed.
std::string run_browser_script(const std::string& script, const std::vector<std::string>& args,
                               std::string_view mark) {
  std::vector<std::string> argv{"node", browser_dir() + "/" + script, chromium_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess node(argv);
  // The scripts bound themselves at 60 s; this only guards against one hanging regardless.
  const int exit_status = node.wait_exit(std::chrono::seconds(90));
  const auto line = node.wait_for_line(mark, std::chrono::seconds(1));
  BOOST_REQUIRE_MESSAGE(line.has_value(), script << " printed no result (exit status "
                                                 << exit_status << "):\n"
                                                 << node.output());
  std::string json = line->substr(line->find(mark) + mark.size());
  BOOST_TEST_MESSAGE(script << ": " << json);
  simdjson::dom::parser parser;
  const Json result = parser.parse(json);
  BOOST_REQUIRE_MESSAGE(result.error() == simdjson::SUCCESS, json);
  BOOST_REQUIRE_MESSAGE(str(result, "error").empty(),
                        "the browser run failed: " << str(result, "error") << "\n"
                                                   << node.output());
  BOOST_REQUIRE_MESSAGE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0, node.output());
  return json;
}

}  // namespace wg::test
