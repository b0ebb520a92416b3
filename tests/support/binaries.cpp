#include "support/binaries.hpp"

#include <boost/test/framework.hpp>
#include <boost/test/tree/test_unit.hpp>

#include "support/sanitizer.hpp"

namespace wg::test {
namespace {

struct Binaries {
  std::string dir = WG_BIN_DIR;
  bool sanitized = kAddressSanitized;
};

// Read once from the program's own arguments (after `--`, Boost.Test leaves them to the
// module).
const Binaries& binaries() {
  static const Binaries parsed = [] {
    Binaries result;
    const auto& suite = boost::unit_test::framework::master_test_suite();
    for (int i = 1; i < suite.argc; ++i) {
      const std::string_view argument = suite.argv[i];
      constexpr std::string_view dir_option = "--binaries=";
      if (argument.starts_with(dir_option)) {
        result.dir = argument.substr(dir_option.size());
      } else if (argument == "--binaries-sanitized") {
        result.sanitized = true;
      }
    }
    return result;
  }();
  return parsed;
}

}  // namespace

const std::string& binary_dir() {
  return binaries().dir;
}

std::string binary_path(std::string_view name) {
  return binary_dir() + "/" + std::string(name);
}

bool binaries_sanitized() {
  return binaries().sanitized;
}

}  // namespace wg::test
