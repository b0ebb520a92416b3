#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "support/process.hpp"

using namespace wg::test;

BOOST_AUTO_TEST_SUITE(support_process_test)

BOOST_AUTO_TEST_CASE(free_port_is_bindable_and_nonzero) {
  BOOST_TEST(free_port() != 0);
  // Nothing listens on a fresh port.
  BOOST_TEST(!wait_for_port(free_port(), std::chrono::milliseconds(50)));
}

BOOST_AUTO_TEST_CASE(temp_dir_writes_and_cleans_up) {
  std::string path;
  {
    TempDir dir;
    path = dir.write("a.txt", "hello");
    ChildProcess cat({"cat", path});
    BOOST_TEST(cat.wait_exit() == 0);
    BOOST_TEST(cat.output() == "hello");
  }
  ChildProcess test({"test", "-e", path});
  int status = test.wait_exit();
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 1);
}

BOOST_AUTO_TEST_CASE(child_env_overrides_and_lines) {
  ChildProcess child({"/bin/sh", "-c", "echo first; echo \"value=$WG_TEST_VAR\"; sleep 30"},
                     {{"WG_TEST_VAR", "42"}});
  auto line = child.wait_for_line("value=");
  BOOST_REQUIRE(line.has_value());
  BOOST_TEST(*line == "value=42");
  BOOST_TEST(child.running());
  child.stop();
  BOOST_TEST(!child.running());
}

BOOST_AUTO_TEST_CASE(listening_port_is_parsed_and_stop_works) {
  ChildProcess child(
      {"/bin/sh", "-c",
       "echo '{\"event\":\"other\",\"listener\":\"x\",\"address\":\"127.0.0.1:1\"}'; "
       "echo '{\"address\":\"127.0.0.1:9\",\"event\":\"listening\",\"listener\":\"y\"}'; "
       "echo '{\"event\":\"listening\",\"listener\":\"x\",\"address\":\"127.0.0.1:1234\"}'; "
       "sleep 30"});
  auto port = listening_port(child, "x");
  BOOST_REQUIRE(port.has_value());
  BOOST_TEST(*port == 1234);
  auto other = listening_port(child, "y");
  BOOST_REQUIRE(other.has_value());
  BOOST_TEST(*other == 9);
  int status = child.stop();
  BOOST_TEST(WIFSIGNALED(status));
  BOOST_TEST(WTERMSIG(status) == SIGTERM);
  BOOST_TEST(!child.running());
}

BOOST_AUTO_TEST_CASE(stop_escalates_to_sigkill) {
  ChildProcess child({"/bin/sh", "-c", "trap '' TERM; echo ready; sleep 30"});
  BOOST_REQUIRE(child.wait_for_line("ready").has_value());
  BOOST_TEST(child.stop(SIGTERM, std::chrono::milliseconds(200)) == -1);
  BOOST_TEST(!child.running());
}

BOOST_AUTO_TEST_CASE(redis_server_start_stop_command) {
  RedisServer redis;
  BOOST_TEST(redis.running());
  BOOST_TEST(redis.command({"PING"}) == "PONG");
  BOOST_TEST(redis.command({"SET", "k", std::string("a\0b", 3)}) == "OK");
  BOOST_TEST(redis.command({"GET", "k"}) == std::string("a\0b", 3));
  BOOST_TEST(redis.command({"GET", "missing"}) == "(nil)");
  BOOST_TEST(redis.command({"INCR", "n"}) == "1");
  BOOST_TEST(redis.command({"NOSUCHCOMMAND"}).rfind("(error) ", 0) == 0);
  BOOST_TEST(redis.url() == "redis://127.0.0.1:" + std::to_string(redis.port()) + "/0");

  auto port = redis.port();
  redis.stop();
  BOOST_TEST(!redis.running());
  BOOST_TEST(!wait_for_port(port, std::chrono::milliseconds(100)));
  redis.start();
  BOOST_TEST(redis.port() == port);
  BOOST_TEST(redis.command({"PING"}) == "PONG");
}

BOOST_AUTO_TEST_CASE(http_request_to_closed_port_reports_status_zero) {
  auto response = http_request(free_port(), "GET", "/", {}, std::chrono::milliseconds(500));
  BOOST_TEST(response.status == 0);
  BOOST_TEST(raw_exchange(free_port(), "x", std::chrono::milliseconds(200)).empty());
}

BOOST_AUTO_TEST_CASE(raw_exchange_against_redis) {
  // redis-server answers inline commands, which makes it a handy raw TCP peer.
  RedisServer redis;
  BOOST_TEST(raw_exchange(redis.port(), "PING\r\nQUIT\r\n") == "+PONG\r\n+OK\r\n");
}

BOOST_AUTO_TEST_CASE(http_request_parses_a_response) {
  namespace asio = boost::asio;
  asio::io_context ioc;
  asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::address_v4::loopback(), 0});
  auto port = acceptor.local_endpoint().port();
  std::string seen_request;
  // One blocking exchange on a helper thread; the client below always connects, so accept
  // returns.
  std::thread server([&] {
    asio::ip::tcp::socket socket(ioc);
    acceptor.accept(socket);
    std::string data;
    char chunk[1024];
    boost::system::error_code ec;
    while (data.find("\r\n\r\n") == std::string::npos) {
      std::size_t n = socket.read_some(asio::buffer(chunk), ec);
      if (ec) break;
      data.append(chunk, n);
    }
    seen_request = data;
    asio::write(socket,
                asio::buffer(std::string_view("HTTP/1.1 201 Created\r\nX-Multi: a\r\n"
                                              "X-Multi: b\r\nContent-Length: 5\r\n\r\nhello")),
                ec);
    socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  });
  auto response = http_request(port, "POST", "/path?q=1", {{"X-Test", "yes"}});
  server.join();
  BOOST_TEST(response.status == 201);
  BOOST_TEST(response.body == "hello");
  BOOST_TEST(response.header("x-multi") == "a, b");
  BOOST_TEST(response.header("X-Multi") == "a, b");
  BOOST_TEST(response.header("absent") == "");
  BOOST_TEST(seen_request.rfind("POST /path?q=1 HTTP/1.1\r\n", 0) == 0);
  BOOST_TEST(seen_request.find("X-Test: yes\r\n") != std::string::npos);
  BOOST_TEST(seen_request.find("Connection: close\r\n") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()  // support_process_test
