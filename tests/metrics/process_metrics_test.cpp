#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "widget_gateway/metrics/process_metrics.hpp"
#include "widget_gateway/metrics/registry.hpp"

// The process_* series: the /proc parsers on lines as the kernel writes them (awkward command
// names included), and the registered series read from this test's own process.

using namespace wg::metrics;

namespace {

// A /proc/<pid>/stat line of Linux 6.1 (52 fields), for a command named `name`.
std::string stat_line(const std::string& name) {
  return "4242 (" + name +
         ") S 1 4242 4242 0 -1 4194560 2763 0 0 0 1250 375 0 0 20 0 3 0 987654 "
         "123456789 2048 18446744073709551615 1 1 0 0 0 0 0 4096 17003 0 0 0 17 1 0 0 0 0 0 0 0 "
         "0 0 0 0 0 0\n";
}

// The value of the one series `name` in an exposition; NaN when it is not there.
double value_of(const std::string& text, const std::string& name) {
  const std::string needle = "\n" + name + " ";
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + needle.size()));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(process_metrics_test)

BOOST_AUTO_TEST_CASE(a_stat_line_gives_cpu_memory_and_start) {
  const auto stat = parse_proc_stat(stat_line("widget-gateway"), 100, 4096);
  BOOST_REQUIRE(stat.has_value());
  BOOST_TEST(stat->cpu_seconds == 16.25);  // (1250 + 375) ticks at 100 per second
  BOOST_TEST(stat->virtual_memory_bytes == 123456789.0);
  BOOST_TEST(stat->resident_memory_bytes == 2048.0 * 4096.0);
  BOOST_TEST(stat->start_seconds_after_boot == 9876.54, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(a_command_name_with_spaces_and_parentheses_is_skipped_whole) {
  for (const std::string& name : {std::string("a b"), std::string("x) S 9 9 (y"), std::string(")"),
                                  std::string("(( 1 2 3 ))")}) {
    const auto stat = parse_proc_stat(stat_line(name), 100, 4096);
    BOOST_REQUIRE_MESSAGE(stat.has_value(), name);
    BOOST_TEST(stat->cpu_seconds == 16.25, name);
    BOOST_TEST(stat->resident_memory_bytes == 2048.0 * 4096.0, name);
  }
}

BOOST_AUTO_TEST_CASE(a_cut_or_garbled_stat_line_is_refused) {
  const std::string line = stat_line("gw");
  BOOST_TEST(!parse_proc_stat(line.substr(0, line.find(" 987654")), 100, 4096).has_value());
  BOOST_TEST(!parse_proc_stat("4242 gw S 1 2 3", 100, 4096).has_value());
  BOOST_TEST(!parse_proc_stat("", 100, 4096).has_value());
  std::string garbled = line;
  garbled.replace(garbled.find("1250"), 4, "12x0");
  BOOST_TEST(!parse_proc_stat(garbled, 100, 4096).has_value());
  BOOST_TEST(!parse_proc_stat(line, 0, 4096).has_value());
  BOOST_TEST(!parse_proc_stat(line, 100, -1).has_value());
}

BOOST_AUTO_TEST_CASE(boot_time_and_the_open_files_limit) {
  const std::string proc_stat =
      "cpu  10 0 5 100 0 0 0 0 0 0\ncpu0 10 0 5 100 0 0 0 0 0 0\nintr 1 2 3\nctxt 42\n"
      "btime 1764000000\nprocesses 99\n";
  BOOST_TEST(parse_boot_time(proc_stat).value_or(-1) == 1764000000.0);
  BOOST_TEST(!parse_boot_time("cpu 1 2 3\nbtimex 5\n").has_value());
  BOOST_TEST(!parse_boot_time("btime soon\n").has_value());

  const std::string limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max cpu time              unlimited            unlimited            seconds   \n"
      "Max open files            65536                524288               files     \n"
      "Max locked memory         8388608              8388608              bytes     \n";
  BOOST_TEST(parse_max_open_files(limits).value_or(-1) == 65536.0);
  BOOST_TEST(!parse_max_open_files(
                  "Max open files            unlimited            unlimited            files\n")
                  .has_value());
  BOOST_TEST(!parse_max_open_files("Max processes 10 10 processes\n").has_value());
}

BOOST_AUTO_TEST_CASE(the_series_read_this_process) {
  Registry registry;
  register_process_metrics(registry);
  const double before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string text = registry.render();
  for (const char* name : {"process_cpu_seconds_total", "process_resident_memory_bytes",
                           "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                           "process_start_time_seconds"}) {
    BOOST_TEST(text.find(std::string("# TYPE ") + name + " ") != std::string::npos, name);
    BOOST_TEST(value_of(text, name) >= 0.0, name);
  }
  BOOST_TEST(value_of(text, "process_resident_memory_bytes") > 1024.0 * 1024.0);
  BOOST_TEST(value_of(text, "process_virtual_memory_bytes") >=
             value_of(text, "process_resident_memory_bytes"));
  BOOST_TEST(value_of(text, "process_max_fds") >= value_of(text, "process_open_fds"));
  // Started in the last hour (a clock-tick rounding of the boot time aside), not in the future.
  const double start = value_of(text, "process_start_time_seconds");
  BOOST_TEST(start <= before + 5.0);
  BOOST_TEST(start >= before - 3600.0);

  // Descriptors are counted at each scrape: three more open, three more counted.
  const double open_before = value_of(text, "process_open_fds");
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) fds.push_back(::open("/dev/null", O_RDONLY));
  text = registry.render();
  BOOST_TEST(value_of(text, "process_open_fds") == open_before + 3);
  for (int fd : fds) ::close(fd);
  text = registry.render();
  BOOST_TEST(value_of(text, "process_open_fds") == open_before);
}

BOOST_AUTO_TEST_SUITE_END()  // process_metrics_test
