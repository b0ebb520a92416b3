#pragma once
// Test support: real processes on loopback, always torn down. Every child gets
// PR_SET_PDEATHSIG so it dies with the test even if the test itself crashes, and every
// destructor stops its process (SIGTERM, then SIGKILL after a bounded wait).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/binaries.hpp"

namespace wg::test {

using namespace std::chrono_literals;

// A loopback TCP port that was free a moment ago (bind 127.0.0.1:0, read it, close).
std::uint16_t free_port();

// True once a TCP connect to 127.0.0.1:port succeeds, false after `timeout`.
bool wait_for_port(std::uint16_t port, std::chrono::milliseconds timeout = 10s);

// The whole content of a file ("" when it cannot be read).
std::string read_file(const std::string& path);

// A fresh temporary directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }
  // Writes `content` to file(name) and returns its path.
  std::string write(std::string_view name, std::string_view content) const;

 private:
  std::string path_;
};

// A child process whose stdout and stderr are captured (merged) into a file.
class ChildProcess {
 public:
  ChildProcess(std::vector<std::string> argv,
               std::map<std::string, std::string> env_overrides = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Everything the process has printed so far.
  std::string output() const;
  // Waits until a line containing `needle` has been printed (searching from the start of the
  // output) and returns that line; nullopt on timeout or if the process exited first.
  std::optional<std::string> wait_for_line(std::string_view needle,
                                           std::chrono::milliseconds timeout = 10s);
  void signal(int sig);
  // Sends `sig` to the process's group (each child leads its own), waits up to `timeout`, then
  // SIGKILLs, and finally SIGKILLs whatever is left in the group. Returns the exit status as
  // from waitpid (use WIFEXITED/WEXITSTATUS), or -1 if it had to be killed.
  int stop(int sig = 15 /*SIGTERM*/, std::chrono::milliseconds timeout = 10s);
  // Waits for a process that is expected to exit by itself; -1 on timeout (then killed).
  int wait_exit(std::chrono::milliseconds timeout = 10s);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_path_;
  TempDir dir_;
};

// Parses `"address":"HOST:PORT"` out of a `"event":"listening"` line printed by the gateway or
// the stub, for the listener named `listener` ("public", "admin", or "stub").
std::optional<std::uint16_t> listening_port(ChildProcess& process, std::string_view listener,
                                            std::chrono::milliseconds timeout = 15s);

// How a private redis-server is secured; the default is plain TCP, no password, no ACL users.
struct RedisOptions {
  std::string requirepass;  // --requirepass: the default user's password
  // One ACL user per entry, as the words of a `user` directive:
  // {"app", "on", ">secret", "~*", "+@all", "-flushdb"}.
  std::vector<std::vector<std::string>> users;
  struct Tls {
    std::string cert_file;  // the server's certificate and key (PEM)
    std::string key_file;
    std::string ca_file;              // --tls-ca-cert-file: verifies client certificates
    std::string auth_clients = "no";  // --tls-auth-clients: "no", "optional" or "yes"
    std::string client_cert_file;     // what command() presents, e.g. when "yes"
    std::string client_key_file;
  };
  // Set: TLS only (--port 0, --tls-port PORT).
  std::optional<Tls> tls;
};

// A private redis-server (no persistence, no config file) on 127.0.0.1. DEBUG is allowed from
// loopback, so tests can stall it with DEBUG SLEEP.
class RedisServer {
 public:
  explicit RedisServer(std::uint16_t port = 0);  // 0 = pick a free port
  explicit RedisServer(RedisOptions options, std::uint16_t port = 0);
  ~RedisServer();
  std::uint16_t port() const { return port_; }
  std::string url() const;  // redis://127.0.0.1:PORT/0, rediss:// with TLS
  void stop();              // SIGKILL-free shutdown; start() brings it back on the same port
  void start();
  bool running() const;
  // Runs one command with a short blocking connection (tests only), returns the raw reply
  // formatted as text: integers and bulk strings as their value, nil as "(nil)". Speaks TLS
  // and sends AUTH requirepass first when the options ask for them.
  std::string command(const std::vector<std::string>& args) const;
  // command() for a reply holding a number; a missing key or field (nil) reads as 0.
  long long integer(const std::vector<std::string>& args) const;

 private:
  std::vector<std::string> argv() const;

  RedisOptions options_;
  std::uint16_t port_;
  TempDir dir_;  // --dir; declared before process_ so that it outlives the server
  std::optional<ChildProcess> process_;
};

// A blocking HTTP/1.1 client for tests (one request per connection unless noted). When no
// response arrives (refused, timed out, malformed), status is 0 and body holds the error text.
struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; repeated ones joined ", "
  std::string body;
  std::string header(std::string_view name) const;  // "" when absent
};

HttpResponse http_request(std::uint16_t port, std::string_view method, std::string_view target,
                          const std::map<std::string, std::string>& headers = {},
                          std::chrono::milliseconds timeout = 15s);
inline HttpResponse http_get(std::uint16_t port, std::string_view target,
                             const std::map<std::string, std::string>& headers = {}) {
  return http_request(port, "GET", target, headers);
}

// Sends raw bytes, then reads until the peer closes or `timeout` passes; returns what was read.
std::string raw_exchange(std::uint16_t port, std::string_view bytes,
                         std::chrono::milliseconds timeout = 5s);

}  // namespace wg::test
