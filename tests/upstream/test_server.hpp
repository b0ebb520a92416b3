#pragma once
// A scripted HTTP/1.1 server for the upstream client's tests: Beast on 127.0.0.1:0, its own
// io_context on a background thread, optionally TLS. Each request is answered as the test's
// script says (status, hang, close, truncate...), and the server counts what it saw so tests
// can assert connection reuse by counting accepted connections.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace wg::test {

using namespace std::chrono_literals;

struct ReceivedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
};

struct ScriptedReply {
  enum class Mode {
    respond,               // a complete response; keep-alive unless connection_close
    respond_then_close,    // a complete keep-alive response, then the server closes anyway
    hang,                  // read the request, never answer
    close_without_answer,  // read the request, close
    truncate,              // head promising more body than is sent, then close
    trickle,               // a complete keep-alive response, written in pieces 5 ms apart
  };
  Mode mode = Mode::respond;
  unsigned status = 200;
  std::string body = "{}";
  bool connection_close = false;  // send "Connection: close" and close after the response
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
};

class TestServer {
 public:
  using Script = std::function<ScriptedReply(const ReceivedRequest&)>;
  struct Tls {
    std::string cert_chain_file;
    std::string key_file;
  };

  explicit TestServer(Script script, std::optional<Tls> tls = std::nullopt);
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  std::uint16_t port() const;
  std::size_t accepted() const;          // connections accepted so far
  std::size_t closed_by_server() const;  // connections the server closed itself
  std::vector<ReceivedRequest> requests() const;

  // Polls (bounded) until the server has closed at least `count` connections itself.
  bool wait_closed_by_server(std::size_t count, std::chrono::milliseconds timeout = 5s) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::thread thread_;
};

// A fresh temporary directory, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Certificates made with the openssl command line: a CA, a server certificate it signed for
// IP 127.0.0.1, one it signed for another name only, and an unrelated second CA.
struct TestPki {
  std::string ca_file;
  std::string other_ca_file;
  TestServer::Tls server;             // SAN IP:127.0.0.1
  TestServer::Tls wrong_name_server;  // SAN DNS:other.test
};
// Throws std::runtime_error if openssl fails.
TestPki make_test_pki(const ScratchDir& dir);

// A loopback port nothing listens on (bound to 127.0.0.1:0, then closed).
std::uint16_t unused_port();

}  // namespace wg::test
