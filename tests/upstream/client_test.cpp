#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "test_server.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using wg::errc;
using wg::test::ScriptedReply;
using wg::test::TestServer;
using wg::upstream::Client;
using wg::upstream::Result;
using Mode = ScriptedReply::Mode;

namespace {

const std::string kWidgetPath = "/api/v1/widgets/widget/w1/remote";
const std::string kWidgetBody = R"({"_id":"w1","title":"Кафе","totalReviewAmount":3})";

wg::config::UpstreamConfig config_for(const std::string& base_url) {
  wg::config::UpstreamConfig config;
  config.base_url = base_url;
  config.connect_timeout = 5s;
  config.timeout = 5s;
  config.pool_size = 4;
  return config;
}

std::string http_url(const TestServer& server, const std::string& path = "") {
  return "http://127.0.0.1:" + std::to_string(server.port()) + path;
}
std::string https_url(const TestServer& server) {
  return "https://127.0.0.1:" + std::to_string(server.port());
}

TestServer::Script always(ScriptedReply reply) {
  return [reply](const wg::test::ReceivedRequest&) { return reply; };
}

// Replies with `first` to the first request, `rest` to all later ones.
TestServer::Script first_then(ScriptedReply first, ScriptedReply rest) {
  auto calls = std::make_shared<int>(0);
  return [=](const wg::test::ReceivedRequest&) { return (*calls)++ == 0 ? first : rest; };
}

ScriptedReply ok(std::string body = kWidgetBody) {
  ScriptedReply reply;
  reply.body = std::move(body);
  return reply;
}

ScriptedReply with_mode(Mode mode) {
  ScriptedReply reply = ok();
  reply.mode = mode;
  return reply;
}

// Runs one get() to completion on `ioc` (bounded).
Result fetch(asio::io_context& ioc, Client& client, const std::string& path = kWidgetPath) {
  std::optional<Result> out;
  asio::co_spawn(ioc, client.get(path), [&](std::exception_ptr error, Result result) {
    if (error) std::rethrow_exception(error);
    out = std::move(result);
  });
  ioc.restart();
  ioc.run_for(20s);
  BOOST_REQUIRE_MESSAGE(out.has_value(), "get() did not finish");
  return std::move(*out);
}

struct ClientFixture {
  asio::io_context ioc;
  wg::ManualClock clock;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(client_test)

BOOST_FIXTURE_TEST_SUITE(plain_http, ClientFixture)

BOOST_AUTO_TEST_CASE(sequential_requests_reuse_one_connection) {
  TestServer server(always(ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);

  const Result first = fetch(ioc, client);
  BOOST_TEST(!first.ec);
  BOOST_TEST(first.response.status == 200u);
  BOOST_TEST(first.response.body == kWidgetBody);
  BOOST_TEST(!first.reused_connection);
  BOOST_TEST(!first.nothing_sent);

  const Result second = fetch(ioc, client);
  BOOST_TEST(!second.ec);
  BOOST_TEST(second.response.body == kWidgetBody);
  BOOST_TEST(second.reused_connection);

  BOOST_TEST(server.accepted() == 1u);
  const auto stats = client.stats();
  BOOST_TEST(stats.connections_opened == 1u);
  BOOST_TEST(stats.requests_sent == 2u);
  BOOST_TEST(stats.reuses == 1u);
  BOOST_TEST(stats.retries == 0u);
}

BOOST_AUTO_TEST_CASE(path_prefix_and_request_headers) {
  TestServer server(always(ok()));
  Client client(ioc.get_executor(), config_for(http_url(server, "/prefix/v/")), clock);

  const Result result =
      fetch(ioc, client, "/api/v1/widgets/widget/w1/reviews/remote?limit=5&skip=10");
  BOOST_TEST(!result.ec);

  const auto requests = server.requests();
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  const auto& request = requests.front();
  BOOST_TEST(request.method == "GET");
  BOOST_TEST(request.target == "/prefix/v/api/v1/widgets/widget/w1/reviews/remote?limit=5&skip=10");
  BOOST_TEST(request.headers.at("host") == "127.0.0.1:" + std::to_string(server.port()));
  BOOST_TEST(request.headers.at("user-agent") == "widget-gateway/" WG_VERSION);
  BOOST_TEST(request.headers.at("accept") == "application/json");
  BOOST_TEST(request.headers.at("accept-encoding") == "identity");
  std::set<std::string> names;
  for (const auto& [name, value] : request.headers) names.insert(name);
  BOOST_TEST((names == std::set<std::string>{"accept", "accept-encoding", "host", "user-agent"}));
}

BOOST_AUTO_TEST_CASE(error_statuses_are_passed_through) {
  ScriptedReply not_found = ok(R"({"message":"not found"})");
  not_found.status = 404;
  ScriptedReply failing = ok("oops");
  failing.status = 500;
  TestServer server(first_then(not_found, failing));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);

  const Result first = fetch(ioc, client);
  BOOST_TEST(!first.ec);
  BOOST_TEST(first.response.status == 404u);
  BOOST_TEST(first.response.body == R"({"message":"not found"})");

  const Result second = fetch(ioc, client);
  BOOST_TEST(!second.ec);
  BOOST_TEST(second.response.status == 500u);
  BOOST_TEST(second.response.body == "oops");
  BOOST_TEST(server.accepted() == 1u);  // error statuses keep the connection alive
}

BOOST_AUTO_TEST_CASE(hanging_upstream_times_out_and_connection_is_not_reused) {
  TestServer server(first_then(with_mode(Mode::hang), ok()));
  auto config = config_for(http_url(server));
  config.timeout = 200ms;
  Client client(ioc.get_executor(), config, clock);

  const Result hung = fetch(ioc, client);
  BOOST_TEST((hung.ec == errc::upstream_timeout));
  BOOST_TEST(!hung.nothing_sent);  // written, never answered: it counts

  const Result next = fetch(ioc, client);
  BOOST_TEST(!next.ec);
  BOOST_TEST(!next.reused_connection);
  BOOST_TEST(server.accepted() == 2u);
}

BOOST_AUTO_TEST_CASE(refused_connection_is_connect_failed) {
  const std::string port = std::to_string(wg::test::unused_port());
  Client client(ioc.get_executor(), config_for("http://127.0.0.1:" + port), clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_connect_failed));
  // What the upstream_failed event names: the host, and the socket's own error.
  BOOST_TEST(client.authority() == "127.0.0.1:" + port);
  BOOST_TEST((result.cause.category() == std::system_category()));
  BOOST_TEST(result.cause.value() == ECONNREFUSED);
  BOOST_TEST(client.stats().requests_sent == 0u);
  BOOST_TEST(result.nothing_sent);  // the quota gives its charge back
}

BOOST_AUTO_TEST_CASE(close_without_answer_is_closed) {
  TestServer server(always(with_mode(Mode::close_without_answer)));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_closed));
  // The request was written: never retried, and counted.
  BOOST_TEST(!result.nothing_sent);
  BOOST_TEST(server.requests().size() == 1u);
  BOOST_TEST(client.stats().retries == 0u);
}

BOOST_AUTO_TEST_CASE(truncated_body_is_invalid_body) {
  TestServer server(always(with_mode(Mode::truncate)));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_invalid_body));
}

BOOST_AUTO_TEST_CASE(oversized_body_is_invalid_body) {
  TestServer server(always(ok(std::string(100, 'x'))));
  auto config = config_for(http_url(server));
  config.max_body_bytes = 99;
  Client client(ioc.get_executor(), config, clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_invalid_body));
}

BOOST_AUTO_TEST_CASE(body_at_the_limit_is_accepted) {
  TestServer server(always(ok(std::string(100, 'x'))));
  auto config = config_for(http_url(server));
  config.max_body_bytes = 100;
  Client client(ioc.get_executor(), config, clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST(!result.ec);
  BOOST_TEST(result.response.body.size() == 100u);
}

BOOST_AUTO_TEST_CASE(a_response_arriving_in_pieces_is_read_whole_and_the_connection_reused) {
  // What has arrived is parsed at once and the rest waited for: head and body in pieces, then
  // a second response on the same connection, byte for byte.
  std::string body = "[";
  for (int i = 0; i < 400; ++i) body += R"({"id":)" + std::to_string(i) + R"(,"text":"Отзыв"},)";
  body.back() = ']';
  ScriptedReply slow = ok(body);
  slow.mode = Mode::trickle;
  TestServer server(always(slow));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  for (int i = 0; i < 2; ++i) {
    const Result result = fetch(ioc, client);
    BOOST_REQUIRE(!result.ec);
    BOOST_TEST(result.response.status == 200u);
    BOOST_TEST(result.response.body == body);
  }
  BOOST_TEST(server.accepted() == 1u);
}

BOOST_AUTO_TEST_CASE(a_body_of_many_reads_is_read_byte_for_byte) {
  std::string body(3 << 20, 'x');  // 3 MiB: dozens of reads, most finding bytes already there
  for (std::size_t i = 0; i < body.size(); i += 4099) body[i] = static_cast<char>('a' + i % 26);
  TestServer server(always(ok(body)));
  auto config = config_for(http_url(server));
  config.max_body_bytes = body.size();
  Client client(ioc.get_executor(), config, clock);
  const Result result = fetch(ioc, client);
  BOOST_REQUIRE(!result.ec);
  BOOST_TEST((result.response.body == body));
}

BOOST_AUTO_TEST_CASE(connection_close_responses_are_not_pooled) {
  ScriptedReply closing = ok();
  closing.connection_close = true;
  TestServer server(always(closing));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);

  BOOST_TEST(!fetch(ioc, client).ec);
  const Result second = fetch(ioc, client);
  BOOST_TEST(!second.ec);
  BOOST_TEST(!second.reused_connection);
  BOOST_TEST(server.accepted() == 2u);
  BOOST_TEST(client.stats().retries == 0u);
}

BOOST_AUTO_TEST_CASE(idle_connection_closed_by_upstream_is_replaced_by_one_retry) {
  TestServer server(first_then(with_mode(Mode::respond_then_close), ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);

  BOOST_TEST(!fetch(ioc, client).ec);
  BOOST_REQUIRE(server.wait_closed_by_server(1));

  const Result second = fetch(ioc, client);
  BOOST_TEST(!second.ec);
  BOOST_TEST(second.response.status == 200u);
  BOOST_TEST(!second.reused_connection);
  BOOST_TEST(server.accepted() == 2u);
  BOOST_TEST(server.requests().size() == 2u);  // the dead connection never carried a request
  const auto stats = client.stats();
  BOOST_TEST(stats.retries == 1u);
  BOOST_TEST(stats.connections_opened == 2u);
  BOOST_TEST(stats.requests_sent == 2u);
}

BOOST_AUTO_TEST_CASE(written_request_on_a_pooled_connection_is_never_sent_again) {
  TestServer server(first_then(ok(), with_mode(Mode::close_without_answer)));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);

  BOOST_TEST(!fetch(ioc, client).ec);
  const Result second = fetch(ioc, client);
  BOOST_TEST((second.ec == errc::upstream_closed));
  BOOST_TEST(second.reused_connection);
  BOOST_TEST(server.requests().size() == 2u);
  BOOST_TEST(server.accepted() == 1u);
  BOOST_TEST(client.stats().retries == 0u);
}

BOOST_AUTO_TEST_CASE(write_that_failed_after_sending_bytes_is_not_retried) {
  // The server refuses the oversized head after reading its first bytes and closes with the
  // rest unread (a reset): the client's write fails part way, on a pooled connection. The
  // request is larger than both sides' socket buffers, so it cannot all be written before.
  TestServer server(always(ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  BOOST_TEST(!fetch(ioc, client).ec);

  const Result huge = fetch(ioc, client, "/huge?pad=" + std::string(12 << 20, 'x'));
  BOOST_TEST((huge.ec == errc::upstream_closed), huge.ec.message());
  BOOST_TEST(!huge.nothing_sent);
  BOOST_TEST(huge.reused_connection);
  BOOST_TEST(server.accepted() == 1u);  // no second connection carried it again
  const auto stats = client.stats();
  BOOST_TEST(stats.retries == 0u);
  BOOST_TEST(stats.requests_sent == 2u);
}

BOOST_AUTO_TEST_CASE(retry_after_is_passed_through_verbatim) {
  ScriptedReply limited = ok(R"({"message":"slow down"})");
  limited.status = 429;
  limited.headers = {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}};
  TestServer server(first_then(limited, ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);

  const Result first = fetch(ioc, client);
  BOOST_TEST(!first.ec);
  BOOST_TEST(first.response.status == 429u);
  BOOST_TEST(first.response.retry_after == "Wed, 21 Oct 2015 07:28:00 GMT");
  const Result second = fetch(ioc, client);
  BOOST_TEST(second.response.status == 200u);
  BOOST_TEST(second.response.retry_after.empty());
}

BOOST_AUTO_TEST_CASE(close_idle_drops_pooled_connections) {
  TestServer server(always(ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  BOOST_TEST(!fetch(ioc, client).ec);
  client.close_idle();
  const Result second = fetch(ioc, client);
  BOOST_TEST(!second.ec);
  BOOST_TEST(!second.reused_connection);
  BOOST_TEST(server.accepted() == 2u);
  BOOST_TEST(client.stats().retries == 0u);
}

// A server closes idle keep-alive connections on its own timeout; a request written as it does
// is lost yet paid for. A pooled connection idle for 4 s is let go instead of used.
BOOST_AUTO_TEST_CASE(a_connection_idle_for_four_seconds_is_not_used_again) {
  TestServer server(always(ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  BOOST_TEST(!fetch(ioc, client).ec);
  clock.advance(3999ms);
  const Result within = fetch(ioc, client);
  BOOST_TEST(!within.ec);
  BOOST_TEST(within.reused_connection);
  clock.advance(4s);
  const Result after = fetch(ioc, client);
  BOOST_TEST(!after.ec);
  BOOST_TEST(!after.reused_connection);
  BOOST_TEST(server.accepted() == 2u);
  BOOST_TEST(client.stats().retries == 0u);  // nothing was written to the old one
}

// `Keep-Alive: timeout=N` from upstream: reused for a second less than N; N = 1 leaves no margin,
// so such a connection is not pooled at all.
BOOST_AUTO_TEST_CASE(keep_alive_timeout_from_upstream_shortens_the_reuse) {
  ScriptedReply announced = ok();
  announced.headers.emplace_back("Keep-Alive", "max=100, timeout=2");
  TestServer server(always(announced));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  BOOST_TEST(!fetch(ioc, client).ec);
  clock.advance(999ms);
  BOOST_TEST(fetch(ioc, client).reused_connection);
  clock.advance(1s);
  BOOST_TEST(!fetch(ioc, client).reused_connection);
  BOOST_TEST(server.accepted() == 2u);

  ScriptedReply at_once = ok();
  at_once.headers.emplace_back("Keep-Alive", "timeout=1");
  TestServer brief(always(at_once));
  Client brief_client(ioc.get_executor(), config_for(http_url(brief)), clock);
  BOOST_TEST(!fetch(ioc, brief_client).ec);
  BOOST_TEST(!fetch(ioc, brief_client).reused_connection);
  BOOST_TEST(brief.accepted() == 2u);
}

BOOST_AUTO_TEST_CASE(pool_size_zero_keeps_nothing) {
  TestServer server(always(ok()));
  auto config = config_for(http_url(server));
  config.pool_size = 0;
  Client client(ioc.get_executor(), config, clock);
  BOOST_TEST(!fetch(ioc, client).ec);
  BOOST_TEST(!fetch(ioc, client).ec);
  BOOST_TEST(server.accepted() == 2u);
}

BOOST_AUTO_TEST_CASE(elapsed_comes_from_the_injected_clock) {
  TestServer server(always(ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST(result.elapsed.count() == 0);  // the manual clock did not move
}

// The exchange's time keeps its microseconds: the access log's upstream_ms and the duration
// histogram would otherwise read 0.000 on a fast upstream.
BOOST_AUTO_TEST_CASE(elapsed_keeps_microseconds) {
  TestServer server([this](const wg::test::ReceivedRequest&) {
    clock.advance(std::chrono::microseconds(1250));  // the exchange takes 1.25 ms
    return ok();
  });
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST(!result.ec);
  BOOST_TEST(result.elapsed.count() == 1250);
  const double ms = std::chrono::duration<double, std::milli>(result.elapsed).count();
  BOOST_TEST(ms == 1.25);
}

BOOST_AUTO_TEST_CASE(bad_configuration_throws_at_construction) {
  BOOST_CHECK_THROW(Client(ioc.get_executor(), config_for("ftp://127.0.0.1/"), clock),
                    std::invalid_argument);
  BOOST_CHECK_THROW(Client(ioc.get_executor(), config_for("not a url"), clock),
                    std::invalid_argument);
  auto missing_ca = config_for("https://127.0.0.1:1");
  missing_ca.ca_file = "/nonexistent/ca.pem";
  BOOST_CHECK_THROW(Client(ioc.get_executor(), missing_ca, clock), std::invalid_argument);

  wg::test::ScratchDir dir;
  const std::string not_a_cert = dir.file("junk.pem");
  { std::ofstream(not_a_cert) << "not a certificate\n"; }
  auto junk_ca = config_for("https://127.0.0.1:1");
  junk_ca.ca_file = not_a_cert;
  BOOST_CHECK_THROW(Client(ioc.get_executor(), junk_ca, clock), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(many_concurrent_gets_from_two_threads) {
  TestServer server(always(ok()));
  Client client(ioc.get_executor(), config_for(http_url(server)), clock);

  constexpr int kGets = 60;
  std::atomic<int> succeeded{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < kGets; ++i) {
    asio::co_spawn(asio::make_strand(ioc), client.get(kWidgetPath),
                   [&](std::exception_ptr error, Result result) {
                     if (!error && !result.ec && result.response.status == 200 &&
                         result.response.body == kWidgetBody) {
                       ++succeeded;
                     }
                     ++finished;
                   });
  }
  std::thread helper([&] { ioc.run_for(30s); });
  ioc.run_for(30s);
  helper.join();

  BOOST_TEST(finished.load() == kGets);
  BOOST_TEST(succeeded.load() == kGets);
  const auto stats = client.stats();
  BOOST_TEST(stats.requests_sent == static_cast<std::uint64_t>(kGets));
  BOOST_TEST(stats.connections_opened == server.accepted());
  BOOST_TEST(stats.connections_opened <= static_cast<std::uint64_t>(kGets));
}

BOOST_AUTO_TEST_SUITE_END()

// TLS: one certificate authority per test run, made with the openssl command line.
struct PkiFixture {
  wg::test::ScratchDir dir;
  wg::test::TestPki pki = wg::test::make_test_pki(dir);
};

struct TlsFixture : ClientFixture {
  static PkiFixture& shared() {
    static PkiFixture fixture;
    return fixture;
  }
  const wg::test::TestPki& pki = shared().pki;
};

BOOST_FIXTURE_TEST_SUITE(tls, TlsFixture)

BOOST_AUTO_TEST_CASE(trusted_ca_from_ca_file_succeeds_and_reuses) {
  TestServer server(always(ok()), pki.server);
  auto config = config_for(https_url(server));
  config.ca_file = pki.ca_file;
  Client client(ioc.get_executor(), config, clock);

  const Result first = fetch(ioc, client);
  BOOST_TEST(!first.ec);
  BOOST_TEST(first.response.status == 200u);
  BOOST_TEST(first.response.body == kWidgetBody);
  const Result second = fetch(ioc, client);
  BOOST_TEST(!second.ec);
  BOOST_TEST(second.reused_connection);
  BOOST_TEST(server.accepted() == 1u);
}

BOOST_AUTO_TEST_CASE(system_store_alone_rejects_a_private_ca) {
  TestServer server(always(ok()), pki.server);
  Client client(ioc.get_executor(), config_for(https_url(server)), clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_tls), result.ec.message());
  BOOST_TEST(server.requests().empty());
  BOOST_TEST(result.nothing_sent);
}

BOOST_AUTO_TEST_CASE(wrong_ca_is_a_tls_error) {
  TestServer server(always(ok()), pki.server);
  auto config = config_for(https_url(server));
  config.ca_file = pki.other_ca_file;
  Client client(ioc.get_executor(), config, clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_tls), result.ec.message());
}

BOOST_AUTO_TEST_CASE(certificate_for_another_name_is_a_tls_error) {
  TestServer server(always(ok()), pki.wrong_name_server);
  auto config = config_for(https_url(server));
  config.ca_file = pki.ca_file;
  Client client(ioc.get_executor(), config, clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_tls), result.ec.message());
}

BOOST_AUTO_TEST_CASE(tls_hang_times_out) {
  TestServer server(always(with_mode(Mode::hang)), pki.server);
  auto config = config_for(https_url(server));
  config.ca_file = pki.ca_file;
  config.timeout = 200ms;
  Client client(ioc.get_executor(), config, clock);
  const Result result = fetch(ioc, client);
  BOOST_TEST((result.ec == errc::upstream_timeout), result.ec.message());
}

BOOST_AUTO_TEST_CASE(tls_idle_connection_closed_by_upstream_is_replaced) {
  TestServer server(first_then(with_mode(Mode::respond_then_close), ok()), pki.server);
  auto config = config_for(https_url(server));
  config.ca_file = pki.ca_file;
  Client client(ioc.get_executor(), config, clock);
  BOOST_TEST(!fetch(ioc, client).ec);
  BOOST_REQUIRE(server.wait_closed_by_server(1));
  const Result second = fetch(ioc, client);
  BOOST_TEST(!second.ec);
  BOOST_TEST(client.stats().retries == 1u);
  BOOST_TEST(server.accepted() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // client_test
