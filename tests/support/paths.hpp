#pragma once
// Where the tests find what is outside the build's executables: the source tree, the Node.js
// packages the browser and HTTP-cache tests installed, Chromium. Said once, in paths.cpp, so
// that no other test file is compiled with a machine's paths in its flags: the compile cache then
// serves a clone in another folder too (docs/ci.md, "How long").

#include <string>

namespace wg::test {

// The checkout the tests were configured from (its conf/, bench/, deploy/ files).
const std::string& source_dir();

// Where `npm ci` installed playwright-core and the browser scripts.
const std::string& browser_dir();

// Where `npm ci` installed http-cache-semantics and its check script.
const std::string& cache_semantics_dir();

// The headless Chromium the browser tests start.
const std::string& chromium_path();

}  // namespace wg::test
