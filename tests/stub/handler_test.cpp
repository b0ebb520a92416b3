#define BOOST_TEST_MODULE stub_handler_test
#include <boost/test/unit_test.hpp>

#include <string>

#include <simdjson.h>

#include "stub/fault_plan.hpp"
#include "stub/stub_handler.hpp"

using namespace std::chrono_literals;
using wg::stub::Dataset;
using wg::stub::FaultEndpoint;
using wg::stub::FaultMode;
using wg::stub::FaultPlan;
using wg::stub::StubHandler;
using wg::stub::StubReply;
namespace http = boost::beast::http;

namespace {

struct Fixture {
  Dataset dataset{1, 20};
  StubHandler handler{dataset};
  std::string w0 = "/api/v1/widgets/widget/" + dataset.id(0);
  std::string w1 = "/api/v1/widgets/widget/" + dataset.id(1);
  std::string w2 = "/api/v1/widgets/widget/" + dataset.id(2);

  StubReply get(const std::string& target) { return handler.handle(http::verb::get, target); }
  StubReply post(const std::string& target) { return handler.handle(http::verb::post, target); }
  unsigned status(const std::string& target) { return static_cast<unsigned>(get(target).status); }
};

bool parses(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  return !parser.parse(text).get(doc);
}

// {"statusCode":N,"message":...,"error":...}
void check_error_body(const StubReply& reply) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_TEST_REQUIRE(!parser.parse(reply.body).get(doc));
  BOOST_TEST(doc["statusCode"].get_uint64().value() == static_cast<unsigned>(reply.status));
  BOOST_TEST(doc["message"].is_string());
  BOOST_TEST(doc["error"].is_string());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fault_plan)

BOOST_AUTO_TEST_CASE(parses_names) {
  for (auto name : {"none", "status500", "status503", "status429", "hang", "truncate",
                    "invalid_json", "close"}) {
    const auto mode = wg::stub::parse_fault_mode(name);
    BOOST_TEST_REQUIRE(mode.has_value(), name);
    BOOST_TEST(wg::stub::to_string(*mode) == name);
  }
  BOOST_TEST(!wg::stub::parse_fault_mode("Status500"));
  BOOST_TEST(!wg::stub::parse_fault_mode(""));
  BOOST_TEST((wg::stub::parse_fault_endpoint("reviews").value() == FaultEndpoint::reviews));
  BOOST_TEST(!wg::stub::parse_fault_endpoint("all"));
}

BOOST_AUTO_TEST_CASE(counted_faults_run_out) {
  FaultPlan plan;
  plan.set(FaultMode::status500, 2, FaultEndpoint::any);
  BOOST_TEST((plan.take(FaultEndpoint::widget) == FaultMode::status500));
  BOOST_TEST(plan.snapshot().remaining.value() == 1u);
  BOOST_TEST((plan.take(FaultEndpoint::reviews) == FaultMode::status500));
  BOOST_TEST((plan.take(FaultEndpoint::reviews) == FaultMode::none));
  BOOST_TEST((plan.snapshot().mode == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(endpoint_filter_does_not_consume_others) {
  FaultPlan plan;
  plan.set(FaultMode::close, 1, FaultEndpoint::reviews);
  BOOST_TEST((plan.take(FaultEndpoint::widget) == FaultMode::none));
  BOOST_TEST((plan.take(FaultEndpoint::reviews) == FaultMode::close));
  BOOST_TEST((plan.take(FaultEndpoint::reviews) == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(uncounted_until_cleared) {
  FaultPlan plan;
  plan.set(FaultMode::hang, std::nullopt, FaultEndpoint::any);
  for (int i = 0; i < 100; ++i)
    BOOST_TEST_REQUIRE((plan.take(FaultEndpoint::widget) == FaultMode::hang));
  plan.set(FaultMode::none, std::nullopt, FaultEndpoint::any);
  BOOST_TEST((plan.take(FaultEndpoint::widget) == FaultMode::none));
  plan.set(FaultMode::truncate, 0, FaultEndpoint::any);  // zero uses = nothing
  BOOST_TEST((plan.take(FaultEndpoint::widget) == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(reset_clears_faults_and_latency) {
  FaultPlan plan;
  plan.set(FaultMode::status503, std::nullopt, FaultEndpoint::widget);
  plan.set_latency(250ms);
  plan.reset();
  BOOST_TEST((plan.take(FaultEndpoint::widget) == FaultMode::none));
  BOOST_TEST(plan.latency().count() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(handler, Fixture)

BOOST_AUTO_TEST_CASE(widget_endpoint) {
  const auto ok = get(w0 + "/remote");
  BOOST_TEST(static_cast<unsigned>(ok.status) == 200u);
  BOOST_TEST(ok.body == dataset.rendered(0)->body());
  BOOST_TEST((ok.fault == FaultMode::none));
  BOOST_TEST(ok.delay.count() == 0);

  const auto missing = get("/api/v1/widgets/widget/ffffffffffffffffffffffff/remote");
  BOOST_TEST(static_cast<unsigned>(missing.status) == 404u);
  check_error_body(missing);
  BOOST_TEST(status(w0 + "/remote?x=1") == 200u);  // query ignored
  BOOST_TEST(static_cast<unsigned>(handler.handle(http::verb::head, w0 + "/remote").status) ==
             200u);
}

BOOST_AUTO_TEST_CASE(reviews_endpoint_statuses) {
  const std::string r = w0 + "/reviews/remote";
  BOOST_TEST(status(r + "?limit=10") == 200u);
  BOOST_TEST(status(r + "?limit=300") == 200u);
  BOOST_TEST(status(r + "?limit=10&skip=5&type=" +
                    std::string(wg::stub::kPlatforms[dataset.plan(0).platforms[0].first])) == 200u);
  // Spec section 7.
  BOOST_TEST(status(r) == 400u);                 // limit missing
  BOOST_TEST(status(r + "?skip=10") == 400u);    // limit missing
  BOOST_TEST(status(r + "?limit=301") == 400u);  // limit > 300
  BOOST_TEST(status(r + "?limit=99999999999999999999999") == 400u);
  BOOST_TEST(status(r + "?limit=abc") == 400u);  // not a number
  BOOST_TEST(status(r + "?limit=") == 400u);
  BOOST_TEST(status(r + "?limit=1.5") == 400u);
  BOOST_TEST(status(r + "?limit=-1") == 400u);
  BOOST_TEST(status(r + "?limit=10&type=facebook") == 400u);  // type outside the list
  BOOST_TEST(status(r + "?limit=10&type=") == 400u);
  BOOST_TEST(status(r + "?limit=10&type=GoogleMap") == 400u);
  BOOST_TEST(status("/api/v1/widgets/widget/nope/reviews/remote?limit=10") == 400u);  // unknown
  // The stub's choices.
  BOOST_TEST(status(r + "?limit=10&skip=-1") == 400u);
  BOOST_TEST(status(r + "?limit=10&skip=x") == 400u);
  BOOST_TEST(get(r + "?limit=0").body == "[]");
  BOOST_TEST(get(r + "?limit=10&skip=700").body == "[]");
  BOOST_TEST(get(r + "?limit=10&skip=100000").body == "[]");
  BOOST_TEST(get(w1 + "/reviews/remote?limit=10").body == "[]");
  BOOST_TEST(get(w2 + "/reviews/remote?limit=10&type=doubleGis").body == "[]");
  check_error_body(get(r + "?limit=301"));
}

BOOST_AUTO_TEST_CASE(reviews_pages_match_dataset) {
  const auto w = dataset.rendered(0);
  BOOST_TEST(get(w0 + "/reviews/remote?limit=50&skip=100").body == w->page(100, 50));
  BOOST_TEST(get(w0 + "/reviews/remote?limit=50").body == w->page(0, 50));
  BOOST_TEST(get(w2 + "/reviews/remote?limit=5&skip=10&type=googleMap").body ==
             dataset.rendered(2)->page(10, 5, wg::stub::platform_index("googleMap")));
  // Percent-encoded query values are decoded; the first of repeated parameters wins.
  BOOST_TEST(get(w0 + "/reviews/remote?%6cimit=5&limit=7").body == w->page(0, 5));
}

BOOST_AUTO_TEST_CASE(routing_and_methods) {
  BOOST_TEST(status("/") == 404u);
  BOOST_TEST(status("/api/v1/widgets/widget//remote") == 404u);
  BOOST_TEST(status(w0 + "/remote/") == 404u);
  BOOST_TEST(status(w0) == 404u);
  BOOST_TEST(status(w0 + "/reviews") == 404u);
  BOOST_TEST(status("/api/v2/widgets/widget/" + dataset.id(0) + "/remote") == 404u);
  BOOST_TEST(status("/__stub/nope") == 404u);
  const auto not_allowed = post(w0 + "/remote");
  BOOST_TEST(static_cast<unsigned>(not_allowed.status) == 405u);
  BOOST_TEST_REQUIRE(not_allowed.headers.size() == 1u);
  BOOST_TEST(not_allowed.headers[0].first == "Allow");
  BOOST_TEST(static_cast<unsigned>(
                 handler.handle(http::verb::delete_, w0 + "/reviews/remote?limit=1").status) ==
             405u);
  BOOST_TEST(static_cast<unsigned>(post("/__stub/stats").status) == 405u);
  BOOST_TEST(status("/__stub/reset") == 405u);
}

BOOST_AUTO_TEST_CASE(counts_api_requests_only) {
  get(w0 + "/remote");
  get("/api/v1/widgets/widget/nope/remote");  // 404: counted
  post(w0 + "/remote");                       // 405: counted
  get(w0 + "/reviews/remote?limit=1");
  get(w0 + "/reviews/remote?limit=1000");  // 400: counted
  get("/elsewhere");                       // not an API path
  get("/__stub/stats");                    // controls never count
  handler.note_connection();
  const auto stats = handler.stats();
  BOOST_TEST(stats.widget == 3u);
  BOOST_TEST(stats.reviews == 2u);
  BOOST_TEST(stats.total == 5u);
  BOOST_TEST(stats.connections == 1u);

  const auto body = get("/__stub/stats").body;
  BOOST_TEST(body == R"({"widget":3,"reviews":2,"total":5,"connections":1})");

  BOOST_TEST(static_cast<unsigned>(post("/__stub/reset").status) == 200u);
  const auto after = handler.stats();
  BOOST_TEST(after.total == 0u);
  BOOST_TEST(after.connections == 0u);
}

BOOST_AUTO_TEST_CASE(fault_control) {
  BOOST_TEST(static_cast<unsigned>(
                 post("/__stub/fault?mode=status500&count=2&endpoint=reviews").status) == 200u);
  BOOST_TEST(status(w0 + "/remote") == 200u);  // other endpoint untouched
  const auto faulted = get(w0 + "/reviews/remote?limit=1");
  BOOST_TEST(static_cast<unsigned>(faulted.status) == 500u);
  check_error_body(faulted);
  BOOST_TEST(status(w0 + "/reviews/remote?limit=1000") == 500u);  // faults win over validation
  BOOST_TEST(status(w0 + "/reviews/remote?limit=1") == 200u);     // used up
  BOOST_TEST(handler.stats().reviews == 3u);                      // faulted ones count

  post("/__stub/fault?mode=status503");  // unlimited, any endpoint
  for (int i = 0; i < 5; ++i) BOOST_TEST(status(w0 + "/remote") == 503u);
  post("/__stub/fault?mode=none");
  BOOST_TEST(status(w0 + "/remote") == 200u);

  post("/__stub/fault?mode=status429&count=1");
  const auto limited = get(w0 + "/remote");
  BOOST_TEST(static_cast<unsigned>(limited.status) == 429u);
  BOOST_TEST_REQUIRE(limited.headers.size() == 1u);
  BOOST_TEST(limited.headers[0].first == "Retry-After");

  post("/__stub/fault?mode=invalid_json&count=1");
  const auto garbage = get(w0 + "/remote");
  BOOST_TEST(static_cast<unsigned>(garbage.status) == 200u);
  BOOST_TEST((garbage.fault == FaultMode::invalid_json));
  BOOST_TEST(!parses(garbage.body));

  post("/__stub/fault?mode=truncate&count=1");
  const auto truncated = get(w0 + "/remote");
  BOOST_TEST((truncated.fault == FaultMode::truncate));
  BOOST_TEST(truncated.body == dataset.rendered(0)->body());  // cut by the I/O shell

  for (auto mode : {"hang", "close"}) {
    post(std::string("/__stub/fault?mode=") + mode + "&count=1");
    const auto reply = get(w0 + "/remote");
    BOOST_TEST(wg::stub::to_string(reply.fault) == mode);
    BOOST_TEST(reply.body.empty());
  }
  BOOST_TEST((get(w0 + "/remote").fault == FaultMode::none));

  BOOST_TEST(static_cast<unsigned>(post("/__stub/fault?mode=explode").status) == 400u);
  BOOST_TEST(static_cast<unsigned>(post("/__stub/fault").status) == 400u);
  BOOST_TEST(static_cast<unsigned>(post("/__stub/fault?mode=close&count=x").status) == 400u);
  BOOST_TEST(static_cast<unsigned>(post("/__stub/fault?mode=close&endpoint=all").status) == 400u);

  post("/__stub/fault?mode=close");
  post("/__stub/reset");
  BOOST_TEST((get(w0 + "/remote").fault == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(latency_control) {
  BOOST_TEST(static_cast<unsigned>(post("/__stub/latency?ms=250").status) == 200u);
  BOOST_TEST(get(w0 + "/remote").delay == 250ms);
  BOOST_TEST(get("/api/v1/widgets/widget/nope/remote").delay == 250ms);
  BOOST_TEST(get("/__stub/stats").delay.count() == 0);  // controls are never delayed
  BOOST_TEST(static_cast<unsigned>(post("/__stub/latency?ms=abc").status) == 400u);
  BOOST_TEST(static_cast<unsigned>(post("/__stub/latency").status) == 400u);
  post("/__stub/latency?ms=0");
  BOOST_TEST(get(w0 + "/remote").delay.count() == 0);
  post("/__stub/latency?ms=10");
  post("/__stub/reset");
  BOOST_TEST(get(w0 + "/remote").delay.count() == 0);
}

BOOST_AUTO_TEST_CASE(widget_listing) {
  const auto all = get("/__stub/widgets");
  BOOST_TEST(static_cast<unsigned>(all.status) == 200u);
  BOOST_TEST(all.body == dataset.listing());
  BOOST_TEST(get("/__stub/widgets?limit=3").body == dataset.listing(3));
  BOOST_TEST(status("/__stub/widgets?limit=x") == 400u);
  BOOST_TEST(handler.stats().total == 0u);
}

BOOST_AUTO_TEST_CASE(invalid_targets) {
  BOOST_TEST(status("http://example.com/api/v1/widgets/widget/x/remote") == 400u);
  BOOST_TEST(status("*") == 400u);
  BOOST_TEST(status("/api/v1/widgets/widget/%zz/remote") == 400u);
}

BOOST_AUTO_TEST_SUITE_END()
