#include <boost/test/unit_test.hpp>

#include <string>

#include <simdjson.h>

#include "upstream-stub/fault_plan.hpp"
#include "upstream-stub/stub_handler.hpp"

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

BOOST_AUTO_TEST_SUITE(handler_test)

BOOST_AUTO_TEST_SUITE(fault_plan)

BOOST_AUTO_TEST_CASE(parses_names) {
  for (auto name :
       {"none", "status500", "status503", "status429", "hang", "truncate", "invalid_json", "close",
        "widget_no_total", "widget_bad_total", "empty_data", "widget_contradict"}) {
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
  BOOST_TEST((plan.take(FaultEndpoint::widget).mode == FaultMode::status500));
  BOOST_TEST(plan.snapshot().remaining.value() == 1u);
  BOOST_TEST((plan.take(FaultEndpoint::reviews).mode == FaultMode::status500));
  BOOST_TEST((plan.take(FaultEndpoint::reviews).mode == FaultMode::none));
  BOOST_TEST((plan.snapshot().mode == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(endpoint_filter_does_not_consume_others) {
  FaultPlan plan;
  plan.set(FaultMode::close, 1, FaultEndpoint::reviews);
  BOOST_TEST((plan.take(FaultEndpoint::widget).mode == FaultMode::none));
  BOOST_TEST((plan.take(FaultEndpoint::reviews).mode == FaultMode::close));
  BOOST_TEST((plan.take(FaultEndpoint::reviews).mode == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(widget_filter_does_not_consume_others) {
  FaultPlan plan;
  plan.set(FaultMode::empty_data, 1, FaultEndpoint::any, std::nullopt, std::string("a1"));
  BOOST_TEST((plan.take(FaultEndpoint::widget, "b2").mode == FaultMode::none));
  BOOST_TEST((plan.take(FaultEndpoint::reviews, "a1").mode == FaultMode::empty_data));
  BOOST_TEST((plan.take(FaultEndpoint::reviews, "a1").mode == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(uncounted_until_cleared) {
  FaultPlan plan;
  plan.set(FaultMode::hang, std::nullopt, FaultEndpoint::any);
  for (int i = 0; i < 100; ++i)
    BOOST_TEST_REQUIRE((plan.take(FaultEndpoint::widget).mode == FaultMode::hang));
  plan.set(FaultMode::none, std::nullopt, FaultEndpoint::any);
  BOOST_TEST((plan.take(FaultEndpoint::widget).mode == FaultMode::none));
  plan.set(FaultMode::truncate, 0, FaultEndpoint::any);  // zero uses = nothing
  BOOST_TEST((plan.take(FaultEndpoint::widget).mode == FaultMode::none));
}

BOOST_AUTO_TEST_CASE(parses_retry_after) {
  using wg::stub::parse_retry_after;
  const auto verbatim = parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT");
  BOOST_TEST_REQUIRE(verbatim.has_value());
  BOOST_TEST(verbatim->verbatim == "Wed, 21 Oct 2015 07:28:00 GMT");
  BOOST_TEST(!verbatim->date);
  BOOST_TEST(parse_retry_after("7")->verbatim == "7");
  BOOST_TEST(parse_retry_after(" soon\t")->verbatim == " soon\t");  // anything printable

  const auto later = parse_retry_after("date:30");
  BOOST_TEST_REQUIRE(later.has_value());
  BOOST_TEST(later->verbatim.empty());
  BOOST_TEST(later->date.value() == 30s);
  BOOST_TEST(wg::stub::to_string(*later) == "date:30");
  BOOST_TEST(parse_retry_after("date:-60")->date.value() == -60s);
  BOOST_TEST(parse_retry_after("date:0")->date.value() == 0s);
  BOOST_TEST(parse_retry_after("date:315360000")->date.value() == 315360000s);

  for (const char* bad :
       {"", "date:", "date:x", "date:1.5", "date:+5", "date:5s", "date: 5", "date:315360001",
        "date:-315360001", "date:99999999999999999999", "7\r\nX-Injected: 1", "\x7f"}) {
    BOOST_TEST_CONTEXT("retry_after \"" << bad << "\"") {
      BOOST_TEST(!parse_retry_after(bad));
    }
  }
  BOOST_TEST(!parse_retry_after(std::string_view("a\0b", 3)));
  BOOST_TEST(!parse_retry_after("a\nb"));
}

BOOST_AUTO_TEST_CASE(retry_after_rides_with_the_fault) {
  FaultPlan plan;
  plan.set(FaultMode::status503, 2, FaultEndpoint::any, wg::stub::RetryAfter{"7", std::nullopt});
  BOOST_TEST(plan.snapshot().retry_after->verbatim == "7");
  const auto first = plan.take(FaultEndpoint::widget);
  BOOST_TEST((first.mode == FaultMode::status503));
  BOOST_TEST(first.retry_after.value().verbatim == "7");
  BOOST_TEST(plan.take(FaultEndpoint::widget).retry_after.has_value());
  const auto after = plan.take(FaultEndpoint::widget);  // used up: no fault, no Retry-After
  BOOST_TEST((after.mode == FaultMode::none));
  BOOST_TEST(!after.retry_after);
  BOOST_TEST(!plan.snapshot().retry_after);

  BOOST_TEST(wg::stub::takes_retry_after(FaultMode::status500));
  BOOST_TEST(wg::stub::takes_retry_after(FaultMode::status503));
  BOOST_TEST(wg::stub::takes_retry_after(FaultMode::status429));
  for (auto mode : {FaultMode::none, FaultMode::hang, FaultMode::truncate, FaultMode::invalid_json,
                    FaultMode::close, FaultMode::widget_no_total, FaultMode::widget_bad_total}) {
    BOOST_TEST(!wg::stub::takes_retry_after(mode), wg::stub::to_string(mode));
  }
}

BOOST_AUTO_TEST_CASE(reset_clears_faults_and_latency) {
  FaultPlan plan;
  plan.set(FaultMode::status503, std::nullopt, FaultEndpoint::widget);
  plan.set_latency(250ms);
  plan.reset();
  BOOST_TEST((plan.take(FaultEndpoint::widget).mode == FaultMode::none));
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

// Only a 200 on an API route may carry the expiry headers (--expires-at): not an error, not a
// test control.
BOOST_AUTO_TEST_CASE(only_api_successes_are_cacheable) {
  BOOST_TEST(get(w0 + "/remote").cacheable);
  BOOST_TEST(handler.handle(http::verb::head, w0 + "/remote").cacheable);
  BOOST_TEST(get(w0 + "/reviews/remote?limit=10").cacheable);
  BOOST_TEST(get(w0 + "/reviews/remote?limit=10&skip=100000").cacheable);  // [] is a 200 too
  BOOST_TEST(!get("/api/v1/widgets/widget/ffffffffffffffffffffffff/remote").cacheable);  // 404
  BOOST_TEST(!get(w0 + "/reviews/remote?limit=301").cacheable);                          // 400
  BOOST_TEST(!post(w0 + "/remote").cacheable);                                           // 405
  BOOST_TEST(!get("/__stub/stats").cacheable);
  BOOST_TEST(!get("/__stub/widgets").cacheable);
  BOOST_TEST(!get("/nope").cacheable);
  post("/__stub/fault?mode=status503&count=1");
  BOOST_TEST(!get(w0 + "/remote").cacheable);
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

BOOST_AUTO_TEST_CASE(retry_after_control) {
  // Defaults: "1" for status429, none for the others.
  post("/__stub/fault?mode=status503&count=1");
  BOOST_TEST(get(w0 + "/remote").headers.empty());

  const auto set = post("/__stub/fault?mode=status503&count=1&retry_after=7");
  BOOST_TEST(static_cast<unsigned>(set.status) == 200u);
  BOOST_TEST(
      set.body ==
      R"({"mode":"status503","remaining":1,"endpoint":"any","retryAfter":"7","widget":null})");
  const auto unavailable = get(w0 + "/remote");
  BOOST_TEST(static_cast<unsigned>(unavailable.status) == 503u);
  BOOST_TEST_REQUIRE(unavailable.headers.size() == 1u);
  BOOST_TEST(unavailable.headers[0].first == "Retry-After");
  BOOST_TEST(unavailable.headers[0].second == "7");
  BOOST_TEST(!unavailable.retry_after_date);
  check_error_body(unavailable);

  // Percent-decoded, then sent as it is; it replaces status429's default.
  post(
      "/__stub/"
      "fault?mode=status429&count=1&retry_after=Wed%2C%2021%20Oct%202015%2007%3A28%3A00+GMT");
  const auto limited = get(w0 + "/reviews/remote?limit=1");
  BOOST_TEST(static_cast<unsigned>(limited.status) == 429u);
  BOOST_TEST_REQUIRE(limited.headers.size() == 1u);
  BOOST_TEST(limited.headers[0].second == "Wed, 21 Oct 2015 07:28:00 GMT");

  // date:N leaves the date to the I/O shell, which knows the response's Date.
  const auto dated = post("/__stub/fault?mode=status429&retry_after=date:30");
  BOOST_TEST(
      dated.body ==
      R"({"mode":"status429","remaining":null,"endpoint":"any","retryAfter":"date:30","widget":null})");
  const auto later = get(w0 + "/remote");
  BOOST_TEST(static_cast<unsigned>(later.status) == 429u);
  BOOST_TEST(later.headers.empty());
  BOOST_TEST(later.retry_after_date.value() == 30s);
  post("/__stub/fault?mode=status500&count=1&retry_after=date:-60");
  BOOST_TEST(get(w0 + "/remote").retry_after_date.value() == -60s);
  BOOST_TEST(!get(w0 + "/remote").retry_after_date);  // used up

  BOOST_TEST(static_cast<unsigned>(post("/__stub/fault?mode=hang&retry_after=7").status) == 400u);
  BOOST_TEST(static_cast<unsigned>(post("/__stub/fault?mode=none&retry_after=7").status) == 400u);
  BOOST_TEST(static_cast<unsigned>(
                 post("/__stub/fault?mode=status503&retry_after=date:soon").status) == 400u);
  BOOST_TEST(static_cast<unsigned>(post("/__stub/fault?mode=status503&retry_after=").status) ==
             400u);
  BOOST_TEST(static_cast<unsigned>(
                 post("/__stub/fault?mode=status503&retry_after=1%0D%0AX-Injected:%201").status) ==
             400u);
  BOOST_TEST((get(w0 + "/remote").fault == FaultMode::none));  // refused controls set nothing
}

BOOST_AUTO_TEST_CASE(widget_faults_break_only_the_total) {
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const std::string& real = dataset.rendered(i)->body();
    const std::string id = "/api/v1/widgets/widget/" + dataset.id(i) + "/remote";
    const std::string member =
        "\"totalReviewAmount\":" + std::to_string(dataset.plan(i).total_reviews);
    const std::size_t at = real.find(member + ",");
    BOOST_TEST_REQUIRE(at != std::string::npos);

    post("/__stub/fault?mode=widget_no_total&count=1");
    const auto missing = get(id);
    BOOST_TEST(static_cast<unsigned>(missing.status) == 200u);
    BOOST_TEST((missing.fault == FaultMode::widget_no_total));
    BOOST_TEST(missing.body == std::string(real).erase(at, member.size() + 1));
    simdjson::dom::parser parser;
    simdjson::dom::object widget;
    BOOST_TEST_REQUIRE(!parser.parse(missing.body).get(widget));
    BOOST_TEST((widget["totalReviewAmount"].error() == simdjson::NO_SUCH_FIELD));
    BOOST_TEST(widget["reviewAmount"].is_object());

    post("/__stub/fault?mode=widget_bad_total&count=1");
    const auto quoted = get(id);
    BOOST_TEST(static_cast<unsigned>(quoted.status) == 200u);
    BOOST_TEST(quoted.body ==
               std::string(real).replace(at, member.size(), "\"totalReviewAmount\":\"12\""));
    simdjson::dom::parser again;
    simdjson::dom::object bad;
    BOOST_TEST_REQUIRE(!again.parse(quoted.body).get(bad));
    BOOST_TEST(std::string_view(bad["totalReviewAmount"].get_string().value()) == "12");
  }

  // On reviews: invalid_json's body. A 405 and an unknown widget's 404 are left alone.
  post("/__stub/fault?mode=widget_no_total");
  const auto reviews = get(w0 + "/reviews/remote?limit=5");
  BOOST_TEST(static_cast<unsigned>(reviews.status) == 200u);
  BOOST_TEST(!parses(reviews.body));
  BOOST_TEST(static_cast<unsigned>(post(w0 + "/remote").status) == 405u);
  BOOST_TEST(status("/api/v1/widgets/widget/ffffffffffffffffffffffff/remote") == 404u);
  post("/__stub/fault?mode=widget_bad_total&endpoint=reviews&count=1");
  BOOST_TEST(!parses(get(w1 + "/reviews/remote?limit=5").body));
  BOOST_TEST(get(w1 + "/reviews/remote?limit=5").body == "[]");
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

BOOST_AUTO_TEST_CASE(glitch_faults_are_well_formed) {
  // Widget 0 has 700 reviews over several platforms: its glitches are visible.
  const std::string widget = w0 + "/remote";
  post("/__stub/fault?mode=empty_data&count=2");
  const auto zero = get(widget);
  BOOST_TEST(static_cast<unsigned>(zero.status) == 200u);
  simdjson::dom::parser parser;
  simdjson::dom::object doc;
  BOOST_TEST_REQUIRE(!parser.parse(zero.body).get(doc));
  BOOST_TEST(doc["totalReviewAmount"].get_uint64().value() == 0u);
  // Each object is held by name: a range-for over a temporary result's value() dangles.
  const simdjson::dom::object amounts = doc["reviewAmount"].get_object().value();
  for (auto [platform, count] : amounts) {
    BOOST_TEST(count.get_uint64().value() == 0u, platform);
  }
  const simdjson::dom::object stars_counts = doc["reviewStars"].get_object().value();
  for (auto [stars, count] : stars_counts) {
    BOOST_TEST(count.get_uint64().value() == 0u, stars);
  }
  BOOST_TEST(doc["title"].is_string());  // the rest as it was
  const auto page = get(w0 + "/reviews/remote?limit=300");
  BOOST_TEST(static_cast<unsigned>(page.status) == 200u);
  BOOST_TEST(page.body == "[]");
  BOOST_TEST(get(w0 + "/reviews/remote?limit=300").body != "[]");  // the fault ran out

  // An invalid request keeps its own answer (the fault is not an answer to it).
  post("/__stub/fault?mode=empty_data&count=1");
  BOOST_TEST(status(w0 + "/reviews/remote?limit=301") == 400u);

  post("/__stub/fault?mode=widget_contradict&count=1");
  const auto contradicting = get(widget);
  simdjson::dom::parser again;
  simdjson::dom::object bad;
  BOOST_TEST_REQUIRE(!again.parse(contradicting.body).get(bad));
  std::uint64_t sum = 0;
  const simdjson::dom::object bad_amounts = bad["reviewAmount"].get_object().value();
  for (auto [platform, count] : bad_amounts) {
    sum += count.get_uint64().value();
  }
  BOOST_TEST(sum == 700u);
  BOOST_TEST(bad["totalReviewAmount"].get_uint64().value() == 701u);

  // A platform named only in sources: first in the list, without a count, without reviews.
  post("/__stub/fault?mode=uncounted_source&count=1");
  const auto uncounted = get(widget);
  simdjson::dom::parser third;
  simdjson::dom::object named;
  BOOST_TEST_REQUIRE(!third.parse(uncounted.body).get(named));
  std::string_view extra;
  BOOST_TEST_REQUIRE(!named["sources"].at(0)["type"].get(extra));
  BOOST_TEST(named["reviewAmount"][extra].error() == simdjson::NO_SUCH_FIELD);
  BOOST_TEST(named["totalReviewAmount"].get_uint64().value() == 700u);
  BOOST_TEST(get(w0 + "/reviews/remote?limit=300&type=" + std::string(extra)).body == "[]");
  BOOST_TEST(get(widget).body.find("example.invalid") == std::string::npos);  // ran out

  // Aimed at one widget: the others are answered as usual, and do not use it up.
  post("/__stub/fault?mode=empty_data&count=1&widget=" + dataset.id(0));
  BOOST_TEST(get(w2 + "/reviews/remote?limit=300").body != "[]");
  BOOST_TEST(get(w0 + "/reviews/remote?limit=300").body == "[]");
  BOOST_TEST(get(w0 + "/reviews/remote?limit=300").body != "[]");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // handler_test
