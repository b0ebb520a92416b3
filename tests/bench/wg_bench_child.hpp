#pragma once
// wg-bench as a child process in the bench tests: run it, get its exit status (and output),
// read fields of the JSON it wrote.

#include <sys/wait.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>
#include <boost/test/unit_test.hpp>

#include "support/process.hpp"

namespace wg::test {

// wg-bench's exit status (-1 if it did not exit normally); its merged output in `output`.
inline int run_bench(std::vector<std::string> args, std::string* output = nullptr) {
  args.insert(args.begin(), binary_path("wg-bench"));
  ChildProcess bench(args);
  const int status = bench.wait_exit(std::chrono::seconds(60));
  if (output) *output = bench.output();
  BOOST_TEST_MESSAGE(bench.output());
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::uint64_t u64(simdjson::dom::element e, std::string_view path) {
  std::uint64_t v = 0;
  const auto error = e.at_pointer(path).get_uint64().get(v);
  BOOST_TEST_REQUIRE(error == simdjson::SUCCESS, "missing " << path);
  return v;
}

}  // namespace wg::test
