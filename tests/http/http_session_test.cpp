// The HTTP/1.1 session's timeouts on the injected clock: a listener in this process with a
// ManualClock, clients over loopback. The clock moves past header_timeout, idle_timeout or the
// send rate's interval and the connection is cut, with no test sleeping for those durations;
// short of them it is not. Every wait here is bounded and none is asserted on.

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "loopback_listener.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/http/request_handler.hpp"
#include "widget_gateway/http/server.hpp"

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

constexpr std::size_t kSessionBigBody = 8 * 1024 * 1024;

class SessionTestHandler final : public wg::http::RequestHandler {
 public:
  wg::http::Task<wg::http::Response> handle(const wg::http::Request& request) override {
    wg::http::Response response;
    response.add_header("Content-Type", "text/plain");
    response.set_body(request.target == "/big" ? std::string(kSessionBigBody, 'b') : "hello");
    co_return response;
  }
  wg::http::Response refuse(wg::http::Refusal) override {
    wg::http::Response response;
    response.status = 400;
    response.set_body("refused");
    return response;
  }
};

wg::config::ServerConfig session_limits() {
  wg::config::ServerConfig limits;
  limits.header_timeout = 10s;
  limits.idle_timeout = 60s;
  limits.min_send_rate = 2048;
  limits.send_rate_interval = 20s;
  limits.max_pending_output_bytes_per_connection = 64 * 1024 * 1024;
  return limits;
}

void send_text(int fd, std::string_view text) {
  BOOST_REQUIRE(::send(fd, text.data(), text.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(text.size()));
}

// What the server sent within `wait`, until a whole answer ("hello") or the end.
struct Received {
  std::string bytes;
  bool closed = false;  // EOF or reset
};

Received receive(int fd, std::chrono::milliseconds wait, std::size_t enough = 0) {
  Received got;
  const auto until = std::chrono::steady_clock::now() + wait;
  char chunk[65536];
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      got.closed = true;
      break;
    }
    got.bytes.append(chunk, static_cast<std::size_t>(n));
    if (enough > 0 && got.bytes.size() >= enough) break;
  }
  return got;
}

bool answered(const Received& got) {
  return got.bytes.ends_with("\r\n\r\nhello");
}

// What came within a moment: nothing, or the end.
Received receive_now(int fd) {
  return receive(fd, 100ms);
}

// A listener on 127.0.0.1 with its own io thread, stopped (drained) at the end.
struct SessionFixture {
  wg::ManualClock clock;
  SessionTestHandler handler;
  wg::http::test::LoopbackListener listener{session_limits(), handler, clock};
  asio::io_context& ioc = listener.ioc;
  wg::http::HttpServer& server = listener.server;
  const std::uint16_t port = listener.port;

  // Returns once the io thread has run everything queued before: each session has gone as far
  // as it can without new bytes or a timer.
  void settle() {
    for (int round = 0; round < 2; ++round) {
      std::promise<void> done;
      asio::post(ioc, [&done] { done.set_value(); });
      done.get_future().wait();
    }
  }

  // Moves the clock and has every connection judge its deadline by it.
  void advance(std::chrono::milliseconds by) {
    clock.advance(by);
    server.check_deadlines();
    settle();
  }

  // A second short of `timeout` the connection stays; past it, it is cut, without an answer.
  // The clock then moves a second at a time, at most 30 (a session that set its deadline after
  // the first move has a later one): bounded whatever the session does.
  void expect_cut_at(int fd, std::chrono::seconds timeout) {
    settle();
    advance(timeout - 1s);
    Received got = receive_now(fd);
    BOOST_TEST(!got.closed);
    for (int step = 0; step < 30 && !got.closed; ++step) {
      advance(1s);
      Received more = receive_now(fd);
      got.bytes += more.bytes;
      got.closed = more.closed;
    }
    BOOST_TEST(got.closed);
    BOOST_TEST(got.bytes.empty());
  }

  int connect_client(int receive_buffer = 0) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    return fd;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(http_session_test)

BOOST_FIXTURE_TEST_CASE(a_head_that_stops_half_way_is_cut_at_header_timeout, SessionFixture) {
  const int fd = connect_client();
  send_text(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(answered(receive(fd, 5s, 5)));

  send_text(fd, "GET /a HTTP/1.1\r\nHost: x\r\n");  // the head's end never comes
  // The clock passes header_timeout: cut, without an answer (a slow client gets none).
  expect_cut_at(fd, 10s);
  ::close(fd);
}

BOOST_FIXTURE_TEST_CASE(a_head_completed_in_time_is_answered, SessionFixture) {
  const int fd = connect_client();
  send_text(fd, "GET /a HTTP/1.1\r\n");
  settle();
  advance(9s);
  send_text(fd, "Host: x\r\n\r\n");
  BOOST_TEST(answered(receive(fd, 5s, 5)));
  ::close(fd);
}

BOOST_FIXTURE_TEST_CASE(an_idle_keep_alive_connection_is_cut_at_idle_timeout, SessionFixture) {
  const int fd = connect_client();
  send_text(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(answered(receive(fd, 5s, 5)));
  settle();
  advance(59s);
  BOOST_TEST(!receive_now(fd).closed);
  // Still served just short of the timeout, which starts again after the answer.
  send_text(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(answered(receive(fd, 5s, 5)));
  expect_cut_at(fd, 60s);
  ::close(fd);
}

BOOST_FIXTURE_TEST_CASE(a_new_connection_that_sends_nothing_is_cut_at_header_timeout,
                        SessionFixture) {
  const int fd = connect_client();
  expect_cut_at(fd, 10s);
  ::close(fd);
}

BOOST_FIXTURE_TEST_CASE(a_reader_that_takes_nothing_is_cut_by_the_send_rate, SessionFixture) {
  const int fd = connect_client(4096);
  send_text(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  // The answer fills both sockets' buffers, and the session waits for room. The client reads
  // nothing until the end: reading would be progress.
  settle();
  advance(19s);
  BOOST_TEST(server.stats().slow_readers_closed.load() == 0u);
  // The first interval carried megabytes: the cut comes at the end of the second one.
  int seconds = 0;
  while (server.stats().slow_readers_closed.load() == 0 && seconds < 60) {
    advance(1s);
    ++seconds;
  }
  BOOST_TEST(server.stats().slow_readers_closed.load() == 1u);
  BOOST_TEST(seconds >= 1);
  // What the client still reads is less than the answer: it was cut, not finished.
  const Received rest = receive(fd, 5s);
  BOOST_TEST(rest.bytes.size() < kSessionBigBody);
  ::close(fd);
}

BOOST_AUTO_TEST_SUITE_END()
