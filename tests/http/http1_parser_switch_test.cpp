// server.http1_parser: the session's own scanner ("own", the default) and Beast's parser
// ("beast", the way back) give a client the same bytes. Two listeners in this process, one
// each way, with a handler that echoes what it was handed; raw loopback sockets send each
// case. What Beast's listener answers the bytes sent whole, the scanner's must answer them
// sent whole and a byte at a time (Date aside). Beast's own answer may change when the bytes
// come a byte at a time (an empty line between pipelined requests whose CR comes alone is
// malformed to it): the scanner's does not.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "loopback_listener.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/http/request_handler.hpp"
#include "widget_gateway/http/server.hpp"

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// Echoes the request as the session handed it over; a refusal says which.
class EchoHandler final : public wg::http::RequestHandler {
 public:
  wg::http::Task<wg::http::Response> handle(const wg::http::Request& request) override {
    std::string body = std::string(request.method_text) + " " + std::string(request.target) + " " +
                       std::to_string(request.version) + (request.keep_alive ? " keep" : " close") +
                       "\n";
    for (const auto& line : request.headers) {
      body += std::string(line.name) + ": " + std::string(line.value) + "\n";
    }
    body += "body: " + std::string(request.body) + "\n";
    wg::http::Response response;
    response.add_header("Content-Type", "text/plain");
    response.set_body(std::move(body));
    co_return response;
  }
  wg::http::Response refuse(wg::http::Refusal why) override {
    wg::http::Response response;
    response.status = 400;
    response.set_body("refused " + std::to_string(static_cast<int>(why)));
    return response;
  }
};

struct SwitchListener {
  wg::SystemClock clock;
  EchoHandler handler;
  wg::http::test::LoopbackListener listener;

  static wg::config::ServerConfig limits(const char* parser) {
    wg::config::ServerConfig limits;
    limits.http1_parser = parser;
    limits.max_header_bytes = 1024;
    limits.max_target_bytes = 256;
    return limits;
  }
  // `bodies`: the listener takes bodies up to 64 bytes (as the admin listener does).
  SwitchListener(const char* parser, bool bodies) : listener(limits(parser), handler, clock) {
    listener.server.set_max_body_bytes(bodies ? 64 : 0);
  }

  // What the listener answers `bytes` (sent whole, or a byte at a time): everything until it
  // closes, or until nothing more came for a moment (a kept-alive connection).
  std::string answer(const std::string& bytes, bool bytewise) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(listener.port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const std::size_t step = bytewise ? 1 : bytes.size();
    for (std::size_t at = 0; at < bytes.size(); at += step) {
      if (::send(fd, bytes.data() + at, std::min(step, bytes.size() - at), MSG_NOSIGNAL) < 0) {
        break;  // the server closed already (it answered a refusal)
      }
      if (bytewise) std::this_thread::sleep_for(1ms);
    }
    ::shutdown(fd, SHUT_WR);
    std::string got;
    char chunk[4096];
    for (int quiet = 0; quiet < 10;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) {
        ++quiet;
        continue;
      }
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      got.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return std::regex_replace(got, std::regex("Date: [^\r]*\r\n"), "");
  }
};

const std::string kGet = "GET /w?x=1 HTTP/1.1\r\nHost: gw\r\nAccept: */*\r\n\r\n";

const std::vector<std::string>& switch_cases() {
  static const std::vector<std::string> cases = {
      kGet,
      kGet + "\r\n" + kGet + "GET /third HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
      "GET /x HTTP/1.2\r\nHost: gw\r\n\r\n",
      "GET /x HTTP/2.0\r\nHost: gw\r\n\r\n",
      "HEAD /x HTTP/3.0\r\nHost: gw\r\n\r\n",
      "GET /" + std::string(300, 'a') + " HTTP/1.1\r\nHost: gw\r\n\r\n",
      "GET /" + std::string(1100, 'a') + " HTTP/1.1\r\nHost: gw\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: gw\r\nX: " + std::string(1100, 'v') + "\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  b\r\n\r\n" + kGet,
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}" + kGet,
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + kGet,
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n",
      "CONNECT gw:443 HTTP/1.1\r\nHost: gw:443\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" + kGet,
      "GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\n",  // the client ends mid-head
  };
  return cases;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http1_parser_switch_test)

BOOST_AUTO_TEST_CASE(both_readers_answer_the_same_bytes) {
  for (const bool bodies : {false, true}) {
    const SwitchListener own("own", bodies);
    const SwitchListener beast("beast", bodies);
    for (const std::string& bytes : switch_cases()) {
      const std::string expected = beast.answer(bytes, false);
      BOOST_TEST(!expected.empty());
      for (const bool bytewise : {false, true}) {
        BOOST_TEST_CONTEXT("bodies " << bodies << ", bytewise " << bytewise << ", case "
                                     << bytes.substr(0, 60)) {
          BOOST_TEST(own.answer(bytes, bytewise) == expected);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
