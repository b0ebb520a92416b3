#include "support/paths.hpp"

namespace wg::test {

const std::string& source_dir() {
  static const std::string path = WG_SOURCE_DIR;
  return path;
}

const std::string& browser_dir() {
  static const std::string path = WG_BROWSER_DIR;
  return path;
}

const std::string& cache_semantics_dir() {
  static const std::string path = WG_CACHE_SEMANTICS_DIR;
  return path;
}

const std::string& chromium_path() {
  static const std::string path = WG_CHROMIUM;
  return path;
}

}  // namespace wg::test
