#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <simdjson.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "widget_gateway/accesslog/access_log.hpp"

using namespace wg::accesslog;

namespace {

class TempDir {
 public:
  TempDir() {
    char dir[] = "/tmp/wg-accesslog-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(dir) != nullptr);
    path_ = dir;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

Record record(std::string_view widget, unsigned status = 200) {
  Record r;
  r.time = wg::WallTime{std::chrono::hours(24 * 365 * 54)};
  r.client = "192.0.2.1";
  r.method = "GET";
  r.route = "widget";
  r.widget = widget;
  r.status = status;
  r.cache = "miss";
  r.upstream_ms = 1.5;
  r.bytes = 100;
  r.duration_ms = 2.0;
  return r;
}

void check_json(const std::string& line, std::string_view widget) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(line);
  BOOST_TEST(std::string_view(doc["widget"]) == widget);
  BOOST_TEST(std::string_view(doc["client"]) == "192.0.2.1");
  BOOST_TEST(std::uint64_t(doc["status"]) == 200u);
}

// Points stdout at a file for the object's lifetime. No test assertions may run meanwhile,
// since Boost.Test reports on stdout.
class StdoutToFile {
 public:
  explicit StdoutToFile(const std::string& path) {
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::close(fd);
  }
  ~StdoutToFile() {
    std::fflush(stdout);
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
  }

 private:
  int saved_ = -1;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(access_log_test)

BOOST_AUTO_TEST_CASE(file_destination_gets_one_json_line_per_request) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  wg::FixedRandom random(0.5);
  {
    AccessLog log(path, 1.0, random);
    BOOST_TEST(log.enabled());
    log.write(record("w1"));
    log.write(record("w2"));
    log.flush();
    const auto lines = read_lines(path);
    BOOST_REQUIRE(lines.size() == 2u);
    check_json(lines[0], "w1");
    check_json(lines[1], "w2");
    log.write(record("w3"));
  }
  const auto lines = read_lines(path);
  BOOST_REQUIRE(lines.size() == 3u);
  check_json(lines[2], "w3");
}

BOOST_AUTO_TEST_CASE(file_is_appended_to) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  { std::ofstream(path) << "existing\n"; }
  wg::FixedRandom random(0.5);
  { AccessLog(path, 1.0, random).write(record("w1")); }
  const auto lines = read_lines(path);
  BOOST_REQUIRE(lines.size() == 2u);
  BOOST_TEST(lines[0] == "existing");
  check_json(lines[1], "w1");
}

BOOST_AUTO_TEST_CASE(destructor_flushes_everything) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  wg::FixedRandom random(0.5);
  constexpr int kLines = 20000;
  {
    AccessLog log(path, 1.0, random);
    for (int i = 0; i < kLines; ++i) log.write(record("w" + std::to_string(i)));
    BOOST_TEST(log.dropped() == 0u);
  }
  const auto lines = read_lines(path);
  BOOST_REQUIRE(lines.size() == std::size_t{kLines});
  check_json(lines.front(), "w0");
  check_json(lines.back(), "w" + std::to_string(kLines - 1));
}

BOOST_AUTO_TEST_CASE(concurrent_writers_produce_whole_lines) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  wg::FixedRandom random(0.5);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  {
    AccessLog log(path, 1.0, random);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&log, t] {
        const std::string widget = "t" + std::to_string(t);
        for (int i = 0; i < kPerThread; ++i) log.write(record(widget));
      });
    }
    for (auto& t : threads) t.join();
  }
  const auto lines = read_lines(path);
  BOOST_REQUIRE(lines.size() == std::size_t{kThreads * kPerThread});
  simdjson::dom::parser parser;
  std::vector<int> per_thread(kThreads, 0);
  for (const auto& line : lines) {
    simdjson::dom::element doc = parser.parse(line);
    const std::string_view widget = doc["widget"];
    BOOST_REQUIRE(widget.size() == 2u);
    ++per_thread.at(static_cast<std::size_t>(widget[1] - '0'));
  }
  for (int n : per_thread) BOOST_TEST(n == kPerThread);
}

BOOST_AUTO_TEST_CASE(sampling_keeps_a_line_when_the_draw_is_below_sample) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  wg::FixedRandom random(0.3);
  {
    AccessLog log(path, 0.5, random);
    log.write(record("kept"));  // 0.3 < 0.5
    random.set(0.5);
    log.write(record("dropped"));  // 0.5 is not below 0.5
    random.set(0.9);
    log.write(record("dropped"));
    log.set_sample(1.0);
    log.write(record("all"));  // 1.0 keeps everything, whatever the draw
    log.set_sample(0.0);
    random.set(0.0);
    log.write(record("none"));
    log.set_sample(7);  // clamped to 1
    log.write(record("clamped"));
    BOOST_TEST(log.dropped() == 0u);  // sampled out is not dropped
  }
  const auto lines = read_lines(path);
  BOOST_REQUIRE(lines.size() == 3u);
  check_json(lines[0], "kept");
  check_json(lines[1], "all");
  check_json(lines[2], "clamped");
}

BOOST_AUTO_TEST_CASE(bad_arguments_fail_at_start) {
  wg::FixedRandom random(0.5);
  BOOST_CHECK_THROW(AccessLog("stdout", 1.5, random), std::invalid_argument);
  BOOST_CHECK_THROW(AccessLog("stdout", -0.1, random), std::invalid_argument);
  BOOST_CHECK_THROW(AccessLog("", 1.0, random), std::invalid_argument);
  BOOST_CHECK_THROW(AccessLog("/nonexistent-dir/x/access.log", 1.0, random), std::system_error);
}

BOOST_AUTO_TEST_CASE(stdout_and_off) {
  TempDir dir;
  const std::string captured = dir.file("stdout.txt");
  wg::FixedRandom random(0.5);
  bool off_enabled = true;
  {
    StdoutToFile redirect(captured);
    {
      AccessLog off("off", 1.0, random);
      off_enabled = off.enabled();
      off.write(record("off"));
      off.flush();
      off.reopen();
    }
    {
      AccessLog out("stdout", 1.0, random);
      out.write(record("to-stdout"));
    }
  }
  BOOST_TEST(!off_enabled);
  const auto lines = read_lines(captured);
  BOOST_REQUIRE(lines.size() == 1u);
  check_json(lines[0], "to-stdout");
}

BOOST_AUTO_TEST_CASE(reopen_follows_a_rotated_file) {
  TempDir dir;
  const std::string path = dir.file("access.log");
  const std::string rotated = dir.file("access.log.1");
  wg::FixedRandom random(0.5);
  {
    AccessLog log(path, 1.0, random);
    log.write(record("before"));
    log.flush();
    std::filesystem::rename(path, rotated);
    log.write(record("after-rename"));  // still the old file: it has not been reopened
    log.reopen();
    log.write(record("after-reopen"));
    log.flush();
    BOOST_TEST(read_lines(path).size() == 1u);
  }
  const auto old_lines = read_lines(rotated);
  BOOST_REQUIRE(old_lines.size() == 2u);
  check_json(old_lines[0], "before");
  check_json(old_lines[1], "after-rename");
  const auto new_lines = read_lines(path);
  BOOST_REQUIRE(new_lines.size() == 1u);
  check_json(new_lines[0], "after-reopen");
}

BOOST_AUTO_TEST_CASE(full_queue_drops_and_counts_instead_of_blocking) {
  // The destination is a pipe nobody reads yet: once its buffer is full the writer thread
  // blocks in write(), the queue fills up, and further lines must be dropped, not waited for.
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  const std::string destination = "/proc/self/fd/" + std::to_string(fds[1]);
  wg::FixedRandom random(0.5);
  constexpr std::size_t kLines = 5000;  // ~1.5 MB, far more than a pipe buffer
  std::uint64_t dropped = 0;
  std::string received;
  std::thread reader;
  {
    AccessLog log(destination, 1.0, random, 8);
    ::close(fds[1]);  // the log holds its own descriptor
    const std::string widget(100, 'p');
    for (std::size_t i = 0; i < kLines; ++i) log.write(record(widget));
    dropped = log.dropped();

    // Drain the pipe so that the destructor can write out what was queued; the reader sees
    // EOF when the destructor closes the log's descriptor.
    reader = std::thread([&received, fd = fds[0]] {
      char buf[65536];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        received.append(buf, static_cast<std::size_t>(n));
      }
    });
  }
  reader.join();
  ::close(fds[0]);

  BOOST_TEST(dropped > 0u);
  BOOST_TEST(dropped < kLines);
  std::size_t lines = 0;
  for (char c : received) lines += c == '\n' ? 1 : 0;
  BOOST_TEST(lines + dropped == kLines);  // every line was either written or counted
}

BOOST_AUTO_TEST_SUITE_END()  // access_log_test
