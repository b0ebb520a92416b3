#pragma once
// Running a browser script of this folder (node SCRIPT CHROMIUM ARGS...) from a Boost.Test case,
// and reading the one JSON line it prints. The scripts drive the system's headless Chromium
// with npm's playwright-core (installed into the build tree by the ctest fixture
// integration_browser_npm_setup).

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wg::test {

// Accessors for a script's result. A missing member reads as "", false or -1 (the checks then
// fail with the whole outcome) rather than throwing.
using Json = simdjson::simdjson_result<simdjson::dom::element>;
std::string str(Json object, const char* key);
bool flag(Json object, const char* key);
std::int64_t integer(Json object, const char* key);
std::string describe(Json fetch);

// Fails the test case, with the reason, when the browser machinery cannot run here.
void require_browser_tools();

// Runs a browser script to its end and returns the JSON it printed after `mark`; fails the
// test case, with the script's output, when there is none, when it does not parse, when it
// reports an error, or when the script failed.
std::string run_browser_script(const std::string& script, const std::vector<std::string>& args,
                               std::string_view mark);

}  // namespace wg::test
