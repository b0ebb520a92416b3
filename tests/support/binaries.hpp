#pragma once
// Where the executables a test starts come from (the gateway, the stub, wg-bench), and how they
// were built. By default: this build tree's, built like the test program itself. A test program
// run with `-- --binaries=DIR [--binaries-sanitized]` drives the executables of DIR instead:
// the sanitized pass of tests/run-all.sh runs the Release pass's driver programs against its
// own sanitized executables (docs/ci.md, "Two passes").

#include <string>
#include <string_view>

namespace wg::test {

// The directory the project's executables are taken from.
const std::string& binary_dir();

// Path of a project executable there (e.g. "widget-gateway").
std::string binary_path(std::string_view name);

// Whether those executables run under AddressSanitizer: freed memory sits in quarantine, and a
// process under libfaketime hangs before main.
bool binaries_sanitized();

}  // namespace wg::test
