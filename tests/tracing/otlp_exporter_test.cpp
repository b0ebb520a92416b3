#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "widget_gateway/tracing/otlp_exporter.hpp"

using namespace wg::tracing;
namespace asio = boost::asio;

BOOST_AUTO_TEST_SUITE(otlp_exporter_test)

BOOST_AUTO_TEST_CASE(endpoints_split_into_host_port_and_target) {
  ExporterSettings s;
  BOOST_REQUIRE(split_endpoint("http://127.0.0.1:4318/v1/traces", s));
  BOOST_TEST(s.host == "127.0.0.1");
  BOOST_TEST(s.port == "4318");
  BOOST_TEST(s.target == "/v1/traces");
  BOOST_REQUIRE(split_endpoint("http://collector/otlp/v1/traces", s));
  BOOST_TEST(s.host == "collector");
  BOOST_TEST(s.port == "80");
  BOOST_TEST(s.target == "/otlp/v1/traces");
  BOOST_REQUIRE(split_endpoint("http://collector:4318", s));
  BOOST_TEST(s.target == "/v1/traces");
  BOOST_TEST(!split_endpoint("https://collector:4318/v1/traces", s));
  BOOST_TEST(!split_endpoint("collector:4318", s));
}

BOOST_AUTO_TEST_CASE(a_batch_the_collector_does_not_take_is_dropped_and_counted) {
  asio::io_context ioc;
  // A port nobody listens on: bound once, then closed.
  std::uint16_t port = 0;
  {
    asio::ip::tcp::acceptor probe(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    port = probe.local_endpoint().port();
  }
  SpanQueue queue(16);
  for (int i = 0; i < 3; ++i) {
    SpanData span;
    span.trace_id.bytes[0] = 1;
    span.span_id.bytes[0] = static_cast<std::uint8_t>(i + 1);
    span.name = "s";
    queue.push(std::move(span));
  }
  ExporterSettings settings;
  settings.host = "127.0.0.1";
  settings.port = std::to_string(port);
  settings.timeout = std::chrono::seconds(5);
  OtlpExporter exporter(ioc.get_executor(), settings, {&queue});
  bool stopped = false;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        co_await exporter.stop();
        stopped = true;
      },
      asio::detached);
  ioc.run_for(std::chrono::seconds(20));
  BOOST_TEST(stopped);
  BOOST_TEST(exporter.failed() == 3u);
  BOOST_TEST(exporter.exported() == 0u);
  std::vector<SpanData> left;
  queue.drain(left, 100);
  BOOST_TEST(left.empty());  // not kept for a retry
}

BOOST_AUTO_TEST_SUITE_END()  // otlp_exporter_test
