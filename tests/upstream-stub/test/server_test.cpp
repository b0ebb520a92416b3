#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <regex>
#include <string_view>
#include <thread>
#include <vector>

#include <simdjson.h>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>

#include "upstream-stub/stub_server.hpp"
#include "test_client.hpp"

using namespace std::chrono_literals;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using wg::stub::StubOptions;
using wg::stub::StubServer;
using wg::stub::test::Result;
using wg::stub::test::TestClient;

namespace {

StubOptions local_options(std::size_t widgets = 20) {
  StubOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.widgets = widgets;
  options.seed = 1;
  return options;
}

// A StubServer on 127.0.0.1:0 with its io_context run by background threads (bounded).
class RunningStub {
 public:
  explicit RunningStub(StubOptions options = local_options(), int threads = 1)
      : ioc_(threads), server_(ioc_, std::move(options)) {
    server_.start();
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { ioc_.run_for(3min); });
  }
  ~RunningStub() {
    server_.stop();
    for (auto& thread : threads_) thread.join();
  }

  StubServer& server() { return server_; }
  std::uint16_t port() const { return server_.port(); }
  const std::string& id(std::size_t i) const { return server_.dataset().id(i); }
  std::string widget(std::size_t i) const { return "/api/v1/widgets/widget/" + id(i) + "/remote"; }
  std::string reviews(std::size_t i, const std::string& query) const {
    return "/api/v1/widgets/widget/" + id(i) + "/reviews/remote" + query;
  }
  wg::stub::StubStats stats() { return server_.handler().stats(); }

 private:
  net::io_context ioc_;
  StubServer server_;
  std::vector<std::thread> threads_;
};

// Seconds since the epoch of an IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT"); nullopt if
// `text` is not exactly one.
std::optional<std::time_t> imf_fixdate(std::string_view text) {
  static const std::regex kForm(
      R"((Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) )"
      R"(\d{4} \d\d:\d\d:\d\d GMT)");
  const std::string copy(text);
  if (!std::regex_match(copy, kForm)) return std::nullopt;
  std::tm tm{};
  if (!::strptime(copy.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm)) return std::nullopt;
  return ::timegm(&tm);
}

bool parses_as_json(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  return !parser.parse(text).get(doc);
}

// A self-signed certificate for 127.0.0.1 in a fresh temporary directory.
class TempCertificate {
 public:
  TempCertificate() {
    std::string pattern = (std::filesystem::temp_directory_path() / "wg-stub-tls-XXXXXX").string();
    BOOST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir_ = pattern;
    cert_ = (dir_ / "cert.pem").string();
    key_ = (dir_ / "key.pem").string();
    const std::string command =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout '" +
        key_ + "' -out '" + cert_ + "' >/dev/null 2>&1";
    BOOST_REQUIRE_MESSAGE(std::system(command.c_str()) == 0, "openssl could not make a cert");
  }
  ~TempCertificate() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& cert() const { return cert_; }
  const std::string& key() const { return key_; }

 private:
  std::filesystem::path dir_;
  std::string cert_, key_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(server_test)

BOOST_AUTO_TEST_CASE(serves_both_endpoints_over_one_keep_alive_connection) {
  RunningStub stub;
  TestClient client(stub.port());
  const Result widget = client.get(stub.widget(0));
  BOOST_TEST_REQUIRE(!widget.ec, widget.ec.message());
  BOOST_TEST(widget.status() == 200u);
  BOOST_TEST(widget.response[http::field::content_type] == "application/json; charset=utf-8");
  BOOST_TEST(widget.body() == stub.server().dataset().rendered(0)->body());

  const Result page = client.get(stub.reviews(0, "?limit=25&skip=50"));
  BOOST_TEST(page.status() == 200u);
  BOOST_TEST(page.body() == stub.server().dataset().rendered(0)->page(50, 25));
  BOOST_TEST(parses_as_json(page.body()));

  const Result head = client.request(http::verb::head, stub.widget(0));
  BOOST_TEST(head.status() == 200u);
  BOOST_TEST(head.response[http::field::content_length] == std::to_string(widget.body().size()));
  BOOST_TEST(head.body().empty());

  BOOST_TEST(client.connected());
  const auto stats = stub.stats();
  BOOST_TEST(stats.connections == 1u);
  BOOST_TEST(stats.widget == 2u);
  BOOST_TEST(stats.reviews == 1u);
  BOOST_TEST(stats.total == 3u);
}

BOOST_AUTO_TEST_CASE(spec_error_statuses) {
  RunningStub stub;
  TestClient client(stub.port());
  auto status = [&](const std::string& target) {
    const Result r = client.get(target);
    BOOST_TEST_REQUIRE(!r.ec, target << ": " << r.ec.message());
    return r.status();
  };
  BOOST_TEST(status(stub.reviews(0, "?limit=301")) == 400u);
  BOOST_TEST(status(stub.reviews(0, "?limit=ten")) == 400u);
  BOOST_TEST(status(stub.reviews(0, "")) == 400u);
  BOOST_TEST(status(stub.reviews(0, "?limit=10&type=instagram")) == 400u);
  BOOST_TEST(status("/api/v1/widgets/widget/0123456789abcdef01234567/reviews/remote?limit=10") ==
             400u);
  BOOST_TEST(status("/api/v1/widgets/widget/0123456789abcdef01234567/remote") == 404u);
  BOOST_TEST(status("/api/v1/other") == 404u);
  const Result post = client.post(stub.widget(0));
  BOOST_TEST(post.status() == 405u);
  BOOST_TEST(post.response[http::field::allow] == "GET, HEAD");
  BOOST_TEST(parses_as_json(post.body()));
  BOOST_TEST(client.connected());        // errors keep the connection
  BOOST_TEST(stub.stats().total == 7u);  // every API-path request, not /api/v1/other
  BOOST_TEST(stub.stats().connections == 1u);
}

BOOST_AUTO_TEST_CASE(controls_over_http) {
  RunningStub stub;
  TestClient client(stub.port());
  client.get(stub.widget(1));
  client.get(stub.reviews(2, "?limit=5"));
  const Result stats = client.get("/__stub/stats");
  BOOST_TEST(stats.body() == R"({"widget":1,"reviews":1,"total":2,"connections":1})");

  const Result listing = client.get("/__stub/widgets?limit=3");
  BOOST_TEST(listing.body() == stub.server().dataset().listing(3));

  BOOST_TEST(client.post("/__stub/reset").status() == 200u);
  BOOST_TEST(client.get("/__stub/stats").body() ==
             R"({"widget":0,"reviews":0,"total":0,"connections":0})");
}

BOOST_AUTO_TEST_CASE(pipelined_requests_are_answered_in_order) {
  RunningStub stub;
  TestClient client(stub.port());
  const auto results = client.pipeline(
      {stub.widget(0), stub.reviews(0, "?limit=3"), stub.reviews(0, "?limit=999"), stub.widget(2)});
  BOOST_TEST_REQUIRE(results.size() == 4u);
  for (const auto& r : results) BOOST_TEST_REQUIRE(!r.ec, r.ec.message());
  const auto& dataset = stub.server().dataset();
  BOOST_TEST(results[0].body() == dataset.rendered(0)->body());
  BOOST_TEST(results[1].body() == dataset.rendered(0)->page(0, 3));
  BOOST_TEST(results[2].status() == 400u);
  BOOST_TEST(results[3].body() == dataset.rendered(2)->body());
  BOOST_TEST(stub.stats().connections == 1u);
}

BOOST_AUTO_TEST_CASE(status_faults) {
  RunningStub stub;
  TestClient client(stub.port());
  BOOST_TEST(client.post("/__stub/fault?mode=status500&count=1").status() == 200u);
  BOOST_TEST(client.get(stub.widget(0)).status() == 500u);
  BOOST_TEST(client.get(stub.widget(0)).status() == 200u);

  client.post("/__stub/fault?mode=status503&count=1&endpoint=reviews");
  BOOST_TEST(client.get(stub.widget(0)).status() == 200u);
  BOOST_TEST(client.get(stub.reviews(0, "?limit=1")).status() == 503u);

  client.post("/__stub/fault?mode=status429&count=1");
  const Result limited = client.get(stub.reviews(0, "?limit=1"));
  BOOST_TEST(limited.status() == 429u);
  BOOST_TEST(limited.response[http::field::retry_after] == "1");
  BOOST_TEST(parses_as_json(limited.body()));
  BOOST_TEST(client.connected());
  BOOST_TEST(stub.stats().total == 5u);  // faulted requests count
}

BOOST_AUTO_TEST_CASE(retry_after_values) {
  RunningStub stub;
  TestClient client(stub.port());
  BOOST_TEST(client.post("/__stub/fault?mode=status503&count=1&retry_after=7").status() == 200u);
  const Result seven = client.get(stub.widget(0));
  BOOST_TEST(seven.status() == 503u);
  BOOST_TEST(seven.response[http::field::retry_after] == "7");

  client.post(
      "/__stub/"
      "fault?mode=status429&count=1&retry_after=Wed%2C%2021%20Oct%202015%2007%3A28%3A00%20GMT");
  const Result verbatim = client.get(stub.reviews(0, "?limit=1"));
  BOOST_TEST(verbatim.status() == 429u);
  BOOST_TEST(verbatim.response[http::field::retry_after] == "Wed, 21 Oct 2015 07:28:00 GMT");
  BOOST_TEST(verbatim.response.count(http::field::retry_after) == 1u);

  // date:N: exactly N seconds after the response's own Date, in the future or the past.
  for (const int offset : {30, -60, 86400}) {
    client.post("/__stub/fault?mode=status429&count=2&retry_after=date:" + std::to_string(offset));
    for (const auto method : {http::verb::get, http::verb::head}) {
      const Result dated = client.request(method, stub.widget(0));
      BOOST_TEST(dated.status() == 429u);
      const auto date = imf_fixdate(dated.response[http::field::date]);
      const auto retry_after = imf_fixdate(dated.response[http::field::retry_after]);
      BOOST_TEST_REQUIRE(date.has_value());
      BOOST_TEST_REQUIRE(retry_after.has_value(), dated.response[http::field::retry_after]);
      BOOST_TEST(*retry_after - *date == offset);
    }
  }
  BOOST_TEST(client.get(stub.widget(0)).response.count(http::field::retry_after) == 0u);
  BOOST_TEST(client.post("/__stub/fault?mode=close&retry_after=7").status() == 400u);
  BOOST_TEST(client.connected());
}

BOOST_AUTO_TEST_CASE(next_expiry_rolls_over_to_a_later_day) {
  using wg::stub::next_expiry;
  BOOST_TEST(next_expiry(1000, 999) == 1000);
  BOOST_TEST(next_expiry(1000, 0) == 1000);
  BOOST_TEST(next_expiry(1000, 1000) == 1000 + 86400);  // never max-age=0
  BOOST_TEST(next_expiry(1000, 1001) == 1000 + 86400);
  BOOST_TEST(next_expiry(1000, 1000 + 86399) == 1000 + 86400);
  BOOST_TEST(next_expiry(1000, 1000 + 86400) == 1000 + 2 * 86400);
  BOOST_TEST(next_expiry(1000, 1000 + 3 * 86400 + 5) == 1000 + 4 * 86400);
}

// --expires-at: every 200 on an API route expires at that moment, by max-age counted from its
// own Date and by Expires; errors and test controls carry neither. Once the moment has passed,
// the same time of the next day.
BOOST_AUTO_TEST_CASE(expires_at_gives_api_successes_one_expiry) {
  for (const std::int64_t ahead : {90, -30}) {
    BOOST_TEST_CONTEXT("expires_at = now + " << ahead) {
      const std::int64_t at = static_cast<std::int64_t>(std::time(nullptr)) + ahead;
      StubOptions options = local_options();
      options.expires_at = at;
      RunningStub stub(options);
      TestClient client(stub.port());
      const std::int64_t expected = ahead > 0 ? at : at + 86400;
      for (const auto method : {http::verb::get, http::verb::head}) {
        for (const auto& target : {stub.widget(0), stub.reviews(0, "?limit=10")}) {
          const Result ok = client.request(method, target);
          BOOST_TEST_REQUIRE(ok.status() == 200u);
          const auto date = imf_fixdate(ok.response[http::field::date]);
          const auto expires = imf_fixdate(ok.response[http::field::expires]);
          BOOST_TEST_REQUIRE(date.has_value());
          BOOST_TEST_REQUIRE(expires.has_value(), ok.response[http::field::expires]);
          BOOST_TEST(*expires == expected);
          BOOST_TEST(ok.response[http::field::cache_control] ==
                     "public, max-age=" + std::to_string(expected - *date));
        }
      }
      for (const auto& target :
           {std::string("/api/v1/widgets/widget/ffffffffffffffffffffffff/remote"),
            stub.reviews(0, "?limit=301"), std::string("/__stub/stats")}) {
        const Result other = client.get(target);
        BOOST_TEST(other.response.count(http::field::cache_control) == 0u, target);
        BOOST_TEST(other.response.count(http::field::expires) == 0u, target);
      }
    }
  }
  // Without it, no expiry headers at all.
  RunningStub plain;
  TestClient client(plain.port());
  const Result ok = client.get(plain.widget(0));
  BOOST_TEST(ok.status() == 200u);
  BOOST_TEST(ok.response.count(http::field::cache_control) == 0u);
  BOOST_TEST(ok.response.count(http::field::expires) == 0u);
}

BOOST_AUTO_TEST_CASE(widget_faults_send_a_widget_without_a_valid_total) {
  RunningStub stub;
  TestClient client(stub.port());
  client.post("/__stub/fault?mode=widget_no_total&count=1");
  const Result missing = client.get(stub.widget(0));
  BOOST_TEST_REQUIRE(!missing.ec);
  BOOST_TEST(missing.status() == 200u);
  BOOST_TEST(missing.response[http::field::content_length] ==
             std::to_string(missing.body().size()));
  simdjson::dom::parser parser;
  simdjson::dom::object widget;
  BOOST_TEST_REQUIRE(!parser.parse(missing.body()).get(widget));
  BOOST_TEST((widget["totalReviewAmount"].error() == simdjson::NO_SUCH_FIELD));
  BOOST_TEST(std::string_view(widget["_id"].get_string().value()) == stub.id(0));

  client.post("/__stub/fault?mode=widget_bad_total&count=1&endpoint=widget");
  const Result quoted = client.get(stub.widget(1));
  BOOST_TEST(quoted.status() == 200u);
  simdjson::dom::parser again;
  simdjson::dom::object bad;
  BOOST_TEST_REQUIRE(!again.parse(quoted.body()).get(bad));
  BOOST_TEST(bad["totalReviewAmount"].is_string());
  BOOST_TEST(client.get(stub.widget(1)).body() == stub.server().dataset().rendered(1)->body());
  BOOST_TEST(client.connected());
}

BOOST_AUTO_TEST_CASE(close_fault_sends_nothing) {
  RunningStub stub;
  TestClient control(stub.port());
  control.post("/__stub/fault?mode=close&count=1");
  TestClient client(stub.port());
  const Result closed = client.get(stub.widget(0));
  BOOST_TEST(closed.ec.failed());
  BOOST_TEST(!client.connected());
  const Result again = client.get(stub.widget(0));
  BOOST_TEST(!again.ec);
  BOOST_TEST(again.status() == 200u);
  BOOST_TEST(stub.stats().widget == 2u);
  BOOST_TEST(stub.stats().connections == 3u);
}

BOOST_AUTO_TEST_CASE(truncate_fault_cuts_the_body) {
  RunningStub stub;
  TestClient control(stub.port());
  control.post("/__stub/fault?mode=truncate&count=1&endpoint=reviews");
  TestClient client(stub.port());
  const Result cut = client.get(stub.reviews(0, "?limit=100"));
  BOOST_TEST((cut.ec == http::error::partial_message), cut.ec.message());
  BOOST_TEST(!client.connected());
  BOOST_TEST(client.get(stub.reviews(0, "?limit=100")).status() == 200u);
}

BOOST_AUTO_TEST_CASE(invalid_json_fault) {
  RunningStub stub;
  TestClient client(stub.port());
  client.post("/__stub/fault?mode=invalid_json&count=1");
  const Result garbage = client.get(stub.widget(0));
  BOOST_TEST_REQUIRE(!garbage.ec);
  BOOST_TEST(garbage.status() == 200u);
  BOOST_TEST(garbage.response[http::field::content_length] ==
             std::to_string(garbage.body().size()));
  BOOST_TEST(!garbage.body().empty());
  BOOST_TEST(!parses_as_json(garbage.body()));
  BOOST_TEST(parses_as_json(client.get(stub.widget(0)).body()));
}

BOOST_AUTO_TEST_CASE(hang_fault_never_answers) {
  RunningStub stub;
  TestClient control(stub.port());
  control.post("/__stub/fault?mode=hang&count=1");
  TestClient client(stub.port());
  const Result hung = client.get(stub.widget(0), 1s);
  BOOST_TEST((hung.ec == beast::error::timeout), hung.ec.message());
  BOOST_TEST(stub.stats().widget == 1u);
  // Other connections are served meanwhile.
  BOOST_TEST(control.get(stub.widget(0)).status() == 200u);
}

BOOST_AUTO_TEST_CASE(stop_closes_hung_connections) {
  std::optional<RunningStub> stub(std::in_place);
  TestClient control(stub->port());
  control.post("/__stub/fault?mode=hang");
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    // Stop once the hanging request has arrived (bounded wait).
    for (int i = 0; i < 1000 && stub->stats().total == 0; ++i) std::this_thread::sleep_for(10ms);
    stub->server().stop();
    stopped = true;
  });
  TestClient client(stub->port());
  const Result hung = client.get(stub->widget(0), 30s);
  stopper.join();
  BOOST_TEST(stopped.load());
  BOOST_TEST(hung.ec.failed());
  BOOST_TEST((hung.ec != beast::error::timeout), hung.ec.message());
  stub.reset();  // joins the io threads: nothing left running
}

BOOST_AUTO_TEST_CASE(latency_delays_api_responses) {
  RunningStub stub;
  TestClient control(stub.port());
  BOOST_TEST(control.post("/__stub/latency?ms=5000").status() == 200u);
  BOOST_TEST(control.get("/__stub/stats").status() == 200u);  // controls are not delayed
  TestClient slow(stub.port());
  BOOST_TEST((slow.get(stub.widget(0), 300ms).ec == beast::error::timeout));

  control.post("/__stub/latency?ms=20");
  TestClient client(stub.port());
  BOOST_TEST(client.get(stub.widget(0)).status() == 200u);

  control.post("/__stub/reset");
  BOOST_TEST(client.get(stub.widget(0), 2s).status() == 200u);
}

BOOST_AUTO_TEST_CASE(many_widgets_and_threads) {
  RunningStub stub(local_options(10000), 2);
  constexpr int kClients = 4, kRequests = 25;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      TestClient client(stub.port());
      for (int i = 0; i < kRequests; ++i) {
        const std::size_t index = 9999 - static_cast<std::size_t>(c * kRequests + i);
        const Result r =
            i % 2 ? client.get(stub.widget(index)) : client.get(stub.reviews(index, "?limit=300"));
        if (!r.ec && r.status() == 200u && parses_as_json(r.body())) ++ok;
      }
    });
  }
  for (auto& thread : clients) thread.join();
  BOOST_TEST(ok.load() == kClients * kRequests);
  BOOST_TEST(stub.stats().total == static_cast<std::uint64_t>(kClients * kRequests));
  BOOST_TEST(stub.stats().connections == static_cast<std::uint64_t>(kClients));
}

BOOST_AUTO_TEST_CASE(oversized_request_head_is_refused) {
  RunningStub stub;
  TestClient client(stub.port());
  const Result r = client.get(stub.widget(0) + "?pad=" + std::string(20000, 'x'));
  BOOST_TEST(r.ec.failed());
  BOOST_TEST(client.get(stub.widget(0)).status() == 200u);
}

BOOST_AUTO_TEST_CASE(tls_mode) {
  TempCertificate certificate;
  StubOptions options = local_options();
  options.tls_cert_file = certificate.cert();
  options.tls_key_file = certificate.key();
  RunningStub stub(options);
  BOOST_TEST(stub.server().tls());

  net::ssl::context trust(net::ssl::context::tls_client);
  trust.load_verify_file(certificate.cert());
  trust.set_verify_mode(net::ssl::verify_peer);
  TestClient client(stub.port(), &trust);
  const Result widget = client.get(stub.widget(0));
  BOOST_TEST_REQUIRE(!widget.ec, widget.ec.message());
  BOOST_TEST(widget.status() == 200u);
  BOOST_TEST(widget.body() == stub.server().dataset().rendered(0)->body());
  BOOST_TEST(client.get(stub.reviews(0, "?limit=301")).status() == 400u);
  BOOST_TEST(client.get(stub.reviews(2, "?limit=300&type=googleMap")).body() ==
             stub.server().dataset().rendered(2)->page(0, 300));

  client.post("/__stub/fault?mode=truncate&count=1");
  BOOST_TEST(client.get(stub.widget(0)).ec.failed());
  BOOST_TEST(client.get(stub.widget(0)).status() == 200u);  // reconnects
  BOOST_TEST(stub.stats().connections == 2u);

  // A client that does not trust the certificate is refused.
  net::ssl::context untrusting(net::ssl::context::tls_client);
  untrusting.set_verify_mode(net::ssl::verify_peer);
  TestClient stranger(stub.port(), &untrusting);
  BOOST_TEST(stranger.get(stub.widget(0)).ec.failed());
}

BOOST_AUTO_TEST_SUITE_END()  // server_test
