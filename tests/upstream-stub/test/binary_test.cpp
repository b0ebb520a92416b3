#include <boost/test/unit_test.hpp>

// The widget-upstream-stub executable: prints its listening line, serves, exits 0 on SIGTERM.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/binaries.hpp"
#include "test_client.hpp"

using namespace std::chrono_literals;

namespace {

// The stub as a child process with stderr on a pipe; always killed on destruction.
class StubProcess {
 public:
  explicit StubProcess(std::vector<std::string> args) {
    int fds[2];
    BOOST_REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    const std::string binary = wg::test::binary_path("widget-upstream-stub");
    args.insert(args.begin(), binary);
    pid_ = ::fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
      ::dup2(fds[1], STDERR_FILENO);
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    err_ = fds[0];
  }
  ~StubProcess() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(err_);
  }

  // The first line on stderr, read within `timeout`.
  std::optional<std::string> first_line(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (const auto nl = output_.find('\n'); nl != std::string::npos) return output_.substr(0, nl);
      pollfd p{err_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[512];
      const auto n = ::read(err_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      output_.append(buf, static_cast<std::size_t>(n));
    }
    return std::nullopt;
  }

  // Sends `sig` and waits (bounded) for the exit; the waitpid status, or nullopt.
  std::optional<int> stop(int sig, std::chrono::milliseconds timeout) {
    ::kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) return status_ = status;
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  std::string output_;
  std::optional<int> status_;
};

std::uint16_t listening_port(const std::string& line) {
  static const std::regex pattern(
      R"re(^\{"event":"listening","listener":"stub","address":"127\.0\.0\.1:(\d+)"\}$)re");
  std::smatch match;
  BOOST_REQUIRE_MESSAGE(std::regex_match(line, match, pattern), "unexpected line: " << line);
  return static_cast<std::uint16_t>(std::stoi(match[1]));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(binary_test)

BOOST_AUTO_TEST_CASE(serves_until_sigterm) {
  StubProcess stub(
      {"--listen", "127.0.0.1:0", "--widgets", "10000", "--seed", "3", "--threads", "2"});
  const auto line = stub.first_line(15s);
  BOOST_TEST_REQUIRE(line.has_value());
  const auto port = listening_port(*line);
  BOOST_TEST(port != 0u);

  wg::stub::test::TestClient client(port);
  const auto listing = client.get("/__stub/widgets?limit=1");
  BOOST_TEST_REQUIRE(listing.status() == 200u);
  const auto id_at = listing.body().find("\"id\":\"");
  BOOST_TEST_REQUIRE(id_at != std::string::npos);
  const std::string id = listing.body().substr(id_at + 6, 24);
  const auto page =
      client.get("/api/v1/widgets/widget/" + id + "/reviews/remote?limit=300&skip=600");
  BOOST_TEST(page.status() == 200u);
  BOOST_TEST(page.body().front() == '[');
  // A hung request must not keep the process from stopping.
  client.post("/__stub/fault?mode=hang");
  wg::stub::test::TestClient hung(port);
  BOOST_TEST((hung.get("/api/v1/widgets/widget/" + id + "/remote", 500ms).ec ==
              boost::beast::error::timeout));

  const auto status = stub.stop(SIGTERM, 10s);
  BOOST_TEST_REQUIRE(status.has_value());
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0);
}

BOOST_AUTO_TEST_CASE(sigint_also_stops) {
  StubProcess stub({"--listen", "127.0.0.1:0"});
  BOOST_TEST_REQUIRE(stub.first_line(15s).has_value());
  const auto status = stub.stop(SIGINT, 10s);
  BOOST_TEST_REQUIRE(status.has_value());
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0);
}

BOOST_AUTO_TEST_CASE(bad_flags_exit_non_zero) {
  for (const auto& flags : {std::vector<std::string>{"--widgets", "many"},
                            std::vector<std::string>{"--expires-at", "-5"}}) {
    StubProcess stub(flags);
    const auto status = stub.stop(0, 10s);  // signal 0: only wait
    BOOST_TEST_REQUIRE(status.has_value());
    BOOST_TEST(WIFEXITED(*status));
    BOOST_TEST(WEXITSTATUS(*status) == 2);
  }
}

BOOST_AUTO_TEST_SUITE_END()  // binary_test
