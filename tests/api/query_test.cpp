#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include "widget_gateway/api/validate.hpp"

using namespace wg::api;

namespace {

struct Expect {
  Expect(std::string q, std::optional<ErrorCode> e, std::uint32_t l = 0, std::uint64_t s = 0,
         std::optional<Platform> t = std::nullopt)
      : query(std::move(q)), error(e), limit(l), skip(s), type(t) {}
  std::string query;
  std::optional<ErrorCode> error;  // nullopt = accepted
  std::uint32_t limit = 0;
  std::uint64_t skip = 0;
  std::optional<Platform> type;
};

std::string describe(const std::variant<ReviewsQuery, Rejection>& r) {
  if (auto* q = std::get_if<ReviewsQuery>(&r)) {
    return "ok limit=" + std::to_string(q->limit) + " skip=" + std::to_string(q->skip) +
           " type=" + (q->type ? std::string(to_string(*q->type)) : "-");
  }
  return "error " + std::string(error_info(std::get<Rejection>(r).code).code);
}

void check(const Expect& e) {
  BOOST_TEST_CONTEXT("query '" << e.query << "'") {
    auto result = parse_reviews_query(e.query);
    if (e.error) {
      auto* rejection = std::get_if<Rejection>(&result);
      BOOST_TEST_REQUIRE(rejection != nullptr, describe(result));
      BOOST_TEST(error_info(rejection->code).code == error_info(*e.error).code);
    } else {
      auto* q = std::get_if<ReviewsQuery>(&result);
      BOOST_TEST_REQUIRE(q != nullptr, describe(result));
      BOOST_TEST(q->limit == e.limit);
      BOOST_TEST(q->skip == e.skip);
      BOOST_TEST((q->type == e.type));
    }
  }
}

const std::string k400Digits(400, '9');

}  // namespace

BOOST_AUTO_TEST_SUITE(query_test)

BOOST_AUTO_TEST_CASE(limit_rules) {
  const std::vector<Expect> cases = {
      {"limit=1", {}, 1},
      {"limit=300", {}, 300},
      {"limit=20", {}, 20},
      {"limit=05", {}, 5},
      {"limit=0000000000000000000000000000000000000000000300", {}, 300},
      {"limit=%35", {}, 5},  // decoded before the digit check
      {"limit=%33%30%30", {}, 300},
      {"%6Cimit=7", {}, 7},  // names are decoded too
      {"%6c%69%6d%69%74=8", {}, 8},
      {"", ErrorCode::limit_missing},
      {"skip=5", ErrorCode::limit_missing},
      {"Limit=5", ErrorCode::limit_missing},  // names are case-sensitive
      {"LIMIT=5", ErrorCode::limit_missing},
      {"limit%3D5", ErrorCode::limit_missing},  // the name is "limit=5", not limit
      {"limit =5", ErrorCode::limit_missing},
      {"limits=5", ErrorCode::limit_missing},
      {"limit=0", ErrorCode::limit_invalid},
      {"limit=000", ErrorCode::limit_invalid},
      {"limit=", ErrorCode::limit_invalid},
      {"limit", ErrorCode::limit_invalid},
      {"limit&skip=1", ErrorCode::limit_invalid},
      {"limit=301", ErrorCode::limit_too_large},
      {"limit=1000", ErrorCode::limit_too_large},
      {"limit=0301", ErrorCode::limit_too_large},
      {"limit=18446744073709551616", ErrorCode::limit_too_large},
      {"limit=99999999999999999999", ErrorCode::limit_too_large},
      {"limit=" + k400Digits, ErrorCode::limit_too_large},
      {"limit=" + std::string(400, '0') + "1", {}, 1},
      {"limit=+5", ErrorCode::limit_invalid},
      {"limit=%2B5", ErrorCode::limit_invalid},
      {"limit=-1", ErrorCode::limit_invalid},
      {"limit=-0", ErrorCode::limit_invalid},
      {"limit=1e2", ErrorCode::limit_invalid},
      {"limit=300.0", ErrorCode::limit_invalid},
      {"limit=5.", ErrorCode::limit_invalid},
      {"limit=0x10", ErrorCode::limit_invalid},
      {"limit= 5", ErrorCode::limit_invalid},
      {"limit=5 ", ErrorCode::limit_invalid},
      {"limit=%205", ErrorCode::limit_invalid},
      {"limit=5%00", ErrorCode::limit_invalid},
      {"limit=five", ErrorCode::limit_invalid},
      {"limit=5=5", ErrorCode::limit_invalid},           // the value is "5=5"
      {"limit=\xef\xbc\x95", ErrorCode::limit_invalid},  // fullwidth 5
      {"limit=%EF%BC%95", ErrorCode::limit_invalid},     // fullwidth 5, encoded
      {"limit=\xd9\xa5", ErrorCode::limit_invalid},      // Arabic-Indic 5
      {"limit=%D9%A5", ErrorCode::limit_invalid},
      {"limit=\xdb\xb5", ErrorCode::limit_invalid},      // Extended Arabic-Indic 5
      {"limit=\xe0\xa5\xab", ErrorCode::limit_invalid},  // Devanagari 5
      {"limit=1%EF%BC%90", ErrorCode::limit_invalid},    // 1 + fullwidth 0
  };
  for (const auto& c : cases) check(c);
}

BOOST_AUTO_TEST_CASE(skip_rules) {
  const std::vector<Expect> cases = {
      {"limit=5", {}, 5, 0},
      {"limit=5&skip=0", {}, 5, 0},
      {"limit=5&skip=10", {}, 5, 10},
      {"limit=5&skip=007", {}, 5, 7},
      {"limit=5&skip=1000000000", {}, 5, 1000000000},
      {"limit=5&skip=0001000000000", {}, 5, 1000000000},
      {"limit=5&skip=%31%30", {}, 5, 10},
      {"limit=5&skip=" + std::string(400, '0'), {}, 5, 0},
      {"limit=5&skip=1000000001", ErrorCode::skip_invalid},
      {"limit=5&skip=9999999999", ErrorCode::skip_invalid},
      {"limit=5&skip=18446744073709551616", ErrorCode::skip_invalid},
      {"limit=5&skip=" + k400Digits, ErrorCode::skip_invalid},
      {"limit=5&skip=", ErrorCode::skip_invalid},
      {"limit=5&skip", ErrorCode::skip_invalid},
      {"limit=5&skip=-1", ErrorCode::skip_invalid},
      {"limit=5&skip=+1", ErrorCode::skip_invalid},
      {"limit=5&skip=1e3", ErrorCode::skip_invalid},
      {"limit=5&skip=10.0", ErrorCode::skip_invalid},
      {"limit=5&skip=abc", ErrorCode::skip_invalid},
      {"limit=5&skip=\xef\xbc\x91", ErrorCode::skip_invalid},
      {"limit=5&skip=\xd9\xa1", ErrorCode::skip_invalid},
      {"limit=5&Skip=abc", {}, 5, 0},  // not the skip parameter
  };
  for (const auto& c : cases) check(c);
}

BOOST_AUTO_TEST_CASE(type_rules) {
  const std::vector<std::pair<std::string, Platform>> codes = {
      {"doubleGis", Platform::doubleGis},   {"yaSprav", Platform::yaSprav},
      {"avito", Platform::avito},           {"zoon", Platform::zoon},
      {"vkontakte", Platform::vkontakte},   {"prodoctorov", Platform::prodoctorov},
      {"otzovik", Platform::otzovik},       {"googleMap", Platform::googleMap},
      {"yaBusiness", Platform::yaBusiness},
  };
  for (const auto& [code, platform] : codes) {
    check({"limit=5&type=" + code, {}, 5, 0, platform});
    check({"type=" + code + "&limit=5", {}, 5, 0, platform});
  }
  check({"limit=5&type=%67oogleMap", {}, 5, 0, Platform::googleMap});
  for (std::string bad : {"", "googlemap", "GoogleMap", "GOOGLEMAP", "googleMap ", " googleMap",
                          "googleMap%00", "google", "all", "*", "googleMap,avito", "%20"}) {
    check({"limit=5&type=" + bad, ErrorCode::type_invalid});
  }
  check({"limit=5&type", ErrorCode::type_invalid});
}

BOOST_AUTO_TEST_CASE(duplicates) {
  for (std::string q : {
           "limit=5&limit=5",
           "limit=5&limit=6",
           "limit=5&limit",
           "limit&limit",
           "limit=5&%6Cimit=5",
           "limit=5&skip=1&skip=1",
           "limit=5&skip=&skip=",
           "limit=5&type=avito&type=avito",
           "limit=5&type=avito&type=zoon",
           "type=x&type=y",
           "limit=abc&limit=5",  // duplicate wins over limit_invalid
           "limit=5&skip=x&skip=y",
           "skip=1&skip=2",  // duplicate wins over limit_missing
           "limit=999&limit=999",
           "limit=5&&limit=5",
       }) {
    check({q, ErrorCode::param_duplicate});
  }
  auto r = parse_reviews_query("limit=5&skip=1&skip=2");
  BOOST_TEST(std::get<Rejection>(r).message == "skip must be given at most once");
}

BOOST_AUTO_TEST_CASE(precedence_between_errors) {
  // duplicate > limit > skip > type
  check({"limit=0&skip=x&type=bad", ErrorCode::limit_invalid});
  check({"limit=301&skip=x&type=bad", ErrorCode::limit_too_large});
  check({"skip=x&type=bad", ErrorCode::limit_missing});
  check({"limit=5&skip=x&type=bad", ErrorCode::skip_invalid});
  check({"limit=5&skip=1&type=bad", ErrorCode::type_invalid});
  check({"limit=5&skip=x&type=bad&type=bad", ErrorCode::param_duplicate});
  check({"limit=5&skip=1%zz", ErrorCode::bad_request});
  check({"limit=5&limit=5&x=%", ErrorCode::bad_request});  // malformed encoding first
}

BOOST_AUTO_TEST_CASE(other_and_empty_parameters) {
  check({"limit=5&foo=bar", {}, 5});
  check({"foo&limit=5&bar=", {}, 5});
  check({"limit=5&&", {}, 5});
  check({"&&limit=5", {}, 5});
  check({"&limit=5&&skip=2&", {}, 5, 2});
  check({"=&limit=5&=x", {}, 5});
  check({"limit=5&callback=x&callback=y", {}, 5});  // others may repeat
  check({"limit=5&utm_source=%FF", {}, 5});
  check({"limit=5&x=a+b", {}, 5});
  check({"&", ErrorCode::limit_missing});
  check({"limit=5&x=%", ErrorCode::bad_request});
  check({"limit=5&x=%2", ErrorCode::bad_request});
  check({"limit=5&%=1", ErrorCode::bad_request});
}

// ---- validate_api_request: the whole order of checks ----

namespace {

std::variant<ApiRequest, Rejection> validate(const std::string& target,
                                             const WidgetPolicy& policy = WidgetPolicy()) {
  static std::string storage;  // the match views must outlive the call
  storage = target;
  auto match = match_route(storage);
  BOOST_TEST_REQUIRE((match.route == Route::widget || match.route == Route::reviews), target);
  return validate_api_request(match, policy);
}

ErrorCode error_of(const std::variant<ApiRequest, Rejection>& r) {
  BOOST_TEST_REQUIRE(std::holds_alternative<Rejection>(r));
  return std::get<Rejection>(r).code;
}

const std::string kW = "/api/v1/widgets/widget/";

}  // namespace

BOOST_AUTO_TEST_CASE(widget_endpoint) {
  auto r = validate(kW + "abc_DEF-123/remote");
  auto& req = std::get<ApiRequest>(r);
  BOOST_TEST((req.endpoint == Endpoint::widget));
  BOOST_TEST(req.widget_id == "abc_DEF-123");
  BOOST_TEST((req.query == ReviewsQuery{}));

  // The widget endpoint ignores its query entirely, but still checks its encoding.
  auto q = std::get<ApiRequest>(validate(kW + "abc/remote?limit=999&limit=x&type=bad"));
  BOOST_TEST((q.query == ReviewsQuery{}));
  BOOST_TEST((error_of(validate(kW + "abc/remote?x=%zz")) == ErrorCode::bad_request));

  // Percent-decoded id.
  BOOST_TEST(std::get<ApiRequest>(validate(kW + "%61%62c/remote")).widget_id == "abc");
}

BOOST_AUTO_TEST_CASE(reviews_endpoint) {
  auto r = validate(kW + "w1/reviews/remote?skip=40&type=googleMap&limit=20&utm=1");
  auto& req = std::get<ApiRequest>(r);
  BOOST_TEST((req.endpoint == Endpoint::reviews));
  BOOST_TEST(req.widget_id == "w1");
  BOOST_TEST(req.query.limit == 20u);
  BOOST_TEST(req.query.skip == 40u);
  BOOST_TEST((req.query.type == Platform::googleMap));

  BOOST_TEST((error_of(validate(kW + "w1/reviews/remote")) == ErrorCode::limit_missing));
  BOOST_TEST((error_of(validate(kW + "w1/reviews/remote?")) == ErrorCode::limit_missing));
}

BOOST_AUTO_TEST_CASE(widget_id_rules) {
  for (std::string bad_id :
       {"a%2Fb", "%2F", "a%3Bb", "a;b", "a%00b", "%00", "a%20b", "a.b", "%2E", "%2E%2E", "...",
        "a%25b", "%C3%A9", "a~b", "a+b", "a%2Bb", "a:b", "a@b", "%7B%7D"}) {
    BOOST_TEST_CONTEXT(bad_id) {
      BOOST_TEST((error_of(validate(kW + bad_id + "/remote")) == ErrorCode::widget_not_found));
      BOOST_TEST((error_of(validate(kW + bad_id + "/reviews/remote?limit=5")) ==
                  ErrorCode::widget_not_found));
    }
  }
  BOOST_TEST(
      (error_of(validate(kW + std::string(65, 'a') + "/remote")) == ErrorCode::widget_not_found));
  BOOST_TEST(std::get<ApiRequest>(validate(kW + std::string(64, 'a') + "/remote")).widget_id ==
             std::string(64, 'a'));
  // Malformed encoding in the id is bad_request, not widget_not_found.
  BOOST_TEST((error_of(validate(kW + "a%zz/remote")) == ErrorCode::bad_request));
  BOOST_TEST((error_of(validate(kW + "a%2/reviews/remote?limit=5")) == ErrorCode::bad_request));
}

BOOST_AUTO_TEST_CASE(order_query_before_widget_id) {
  // Query errors win over an invalid widget id; malformed encoding wins over both.
  BOOST_TEST((error_of(validate(kW + "a%2Fb/reviews/remote?limit=0")) == ErrorCode::limit_invalid));
  BOOST_TEST((error_of(validate(kW + "a%2Fb/reviews/remote")) == ErrorCode::limit_missing));
  BOOST_TEST((error_of(validate(kW + "a%zz/reviews/remote?limit=0")) == ErrorCode::bad_request));
  BOOST_TEST((error_of(validate(kW + "ok/reviews/remote?limit=0&x=%q")) == ErrorCode::bad_request));
  BOOST_TEST(
      (error_of(validate(kW + "a%2Fb/reviews/remote?limit=5")) == ErrorCode::widget_not_found));
}

BOOST_AUTO_TEST_CASE(custom_pattern_and_allowlist) {
  WidgetPolicy dotted("^[a-z.]{1,10}$", {});
  BOOST_TEST(std::get<ApiRequest>(validate(kW + "a.b/remote", dotted)).widget_id == "a.b");
  // "." and ".." are refused whatever the pattern allows.
  BOOST_TEST((error_of(validate(kW + "%2E/remote", dotted)) == ErrorCode::widget_not_found));
  BOOST_TEST((error_of(validate(kW + "%2e%2E/remote", dotted)) == ErrorCode::widget_not_found));
  BOOST_TEST(std::get<ApiRequest>(validate(kW + ".../remote", dotted)).widget_id == "...");

  WidgetPolicy listed(std::string(kDefaultWidgetPattern), {"alpha", "beta"});
  BOOST_TEST(std::get<ApiRequest>(validate(kW + "alpha/remote", listed)).widget_id == "alpha");
  BOOST_TEST((error_of(validate(kW + "gamma/remote", listed)) == ErrorCode::widget_not_found));
  BOOST_TEST((error_of(validate(kW + "gamma/reviews/remote?limit=5", listed)) ==
              ErrorCode::widget_not_found));
}

BOOST_AUTO_TEST_CASE(non_api_routes_are_refused) {
  RouteMatch health;
  health.route = Route::healthz;
  BOOST_TEST((error_of(validate_api_request(health, WidgetPolicy())) == ErrorCode::not_found));
}

BOOST_AUTO_TEST_CASE(target_encoding_for_other_routes) {
  BOOST_TEST(target_encoding_valid(match_route("/healthz?x=%41")));
  BOOST_TEST(!target_encoding_valid(match_route("/healthz?x=%4")));
  BOOST_TEST(target_encoding_valid(match_route(kW + "a%41/remote?limit=0&limit=x")));
  BOOST_TEST(!target_encoding_valid(match_route(kW + "a%4/remote")));
  BOOST_TEST(!target_encoding_valid(match_route(kW + "a/reviews/remote?%")));
}

BOOST_AUTO_TEST_SUITE_END()  // query_test
