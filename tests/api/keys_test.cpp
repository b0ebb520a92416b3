#include <boost/test/unit_test.hpp>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/api/percent.hpp"
#include "widget_gateway/api/validate.hpp"
#include "widget_gateway/api/widget_policy.hpp"

using namespace wg::api;

namespace {

ApiRequest reviews(std::string id, std::uint32_t limit, std::uint64_t skip = 0,
                   std::optional<Platform> type = std::nullopt) {
  ApiRequest r;
  r.endpoint = Endpoint::reviews;
  r.widget_id = std::move(id);
  r.query = {limit, skip, type};
  return r;
}

ApiRequest widget(std::string id) {
  ApiRequest r;
  r.endpoint = Endpoint::widget;
  r.widget_id = std::move(id);
  return r;
}

ApiRequest validated(const std::string& target) {
  auto match = match_route(target);
  auto result = validate_api_request(match, WidgetPolicy());
  BOOST_TEST_REQUIRE(std::holds_alternative<ApiRequest>(result), target);
  return std::get<ApiRequest>(result);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(keys_test)

BOOST_AUTO_TEST_CASE(key_format) {
  BOOST_TEST(cache_key(widget("abc")) == "wg:{abc}:w");
  BOOST_TEST(cache_key(reviews("abc", 20)) == "wg:{abc}:r:*:20:0");
  BOOST_TEST(cache_key(reviews("abc", 300, 1000000000, Platform::googleMap)) ==
             "wg:{abc}:r:googleMap:300:1000000000");
  BOOST_TEST(widget_key_prefix("abc") == "wg:{abc}:");
  BOOST_TEST(cache_key(widget("A-z_09")) == "wg:{A-z_09}:w");
}

BOOST_AUTO_TEST_CASE(key_escaping) {
  BOOST_TEST(escape_key_id("a:b") == "a%3Ab");
  BOOST_TEST(escape_key_id("{x}") == "%7Bx%7D");
  BOOST_TEST(escape_key_id("a%b") == "a%25b");
  BOOST_TEST(escape_key_id("a%25b") == "a%2525b");
  BOOST_TEST(escape_key_id(std::string("\0/\xff", 3)) == "%00%2F%FF");
  BOOST_TEST(escape_key_id("a.b~c d") == "a%2Eb%7Ec%20d");
  BOOST_TEST(cache_key(widget("x}:w")) == "wg:{x%7D%3Aw}:w");
  // An id can never end the hash tag early or contain another one.
  for (int b = 0; b < 256; ++b) {
    std::string id = "a" + std::string(1, static_cast<char>(b)) + "b";
    std::string key = cache_key(widget(id));
    BOOST_TEST(key.find('{') == 3u);
    BOOST_TEST(key.find('}') == key.size() - 3);
    std::string inner = key.substr(4, key.size() - 7);
    // Escaping is reversible, so two ids never share a key.
    BOOST_TEST(*percent_decode(inner) == id);
  }
}

BOOST_AUTO_TEST_CASE(order_defaults_and_ignored_parameters_do_not_matter) {
  const std::string base = "/api/v1/widgets/widget/w1/reviews/remote?";
  const std::vector<std::string> same = {
      "limit=20",           "skip=0&limit=20",           "limit=20&skip=0",
      "limit=020&skip=000", "utm_source=x&limit=20",     "limit=20&&&",
      "limit=%32%30",       "%6Cimit=20&skip=0&foo=bar",
  };
  std::set<std::string> keys, targets;
  for (const auto& q : same) {
    auto r = validated(base + q);
    keys.insert(cache_key(r));
    targets.insert(upstream_target(r));
  }
  BOOST_TEST(keys.size() == 1u);
  BOOST_TEST(*keys.begin() == "wg:{w1}:r:*:20:0");
  BOOST_TEST(targets.size() == 1u);
  BOOST_TEST(*targets.begin() == "/api/v1/widgets/widget/w1/reviews/remote?limit=20&skip=0");

  auto a = validated(base + "type=avito&skip=40&limit=20");
  auto b = validated(base + "limit=20&type=avito&skip=40");
  BOOST_TEST(cache_key(a) == cache_key(b));
  BOOST_TEST(cache_key(a) == "wg:{w1}:r:avito:20:40");

  // The widget endpoint ignores its query.
  BOOST_TEST(cache_key(validated("/api/v1/widgets/widget/w1/remote?limit=5")) ==
             cache_key(validated("/api/v1/widgets/widget/w1/remote")));
  // Percent-encoded and plain ids are one widget.
  BOOST_TEST(cache_key(validated("/api/v1/widgets/widget/%77%31/remote")) == "wg:{w1}:w");
}

BOOST_AUTO_TEST_CASE(distinct_requests_have_distinct_keys) {
  std::set<std::string> keys, targets;
  std::size_t count = 0;
  for (std::string id : {"a", "b", "ab", "a-b", "a_b", "A"}) {
    keys.insert(cache_key(widget(id)));
    targets.insert(upstream_target(widget(id)));
    ++count;
    for (std::uint32_t limit : {1u, 10u, 100u, 300u}) {
      for (std::uint64_t skip : {0ull, 1ull, 10ull, 1000000000ull}) {
        std::vector<std::optional<Platform>> types = {std::nullopt};
        for (std::size_t p = 0; p < kPlatformCount; ++p) types.push_back(static_cast<Platform>(p));
        for (auto type : types) {
          auto r = reviews(id, limit, skip, type);
          keys.insert(cache_key(r));
          targets.insert(upstream_target(r));
          ++count;
          BOOST_TEST(cache_key(r).starts_with(widget_key_prefix(id)));
        }
      }
    }
  }
  BOOST_TEST(keys.size() == count);
  BOOST_TEST(targets.size() == count);
  // limit 1 skip 10 must not collide with limit 11 skip 0 and the like.
  BOOST_TEST(cache_key(reviews("a", 1, 10)) != cache_key(reviews("a", 11, 0)));
  BOOST_TEST(cache_key(reviews("a", 11, 0)) != cache_key(reviews("a", 1, 10)));
}

BOOST_AUTO_TEST_CASE(random_ids_never_collide) {
  std::mt19937 rng(7);
  std::set<std::string> ids, keys, prefixes;
  for (int i = 0; i < 5000; ++i) {
    std::string id;
    int len = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int k = 0; k < len; ++k) {
      static const std::string alphabet = std::string("ab%:{}*\0/-_", 11);
      id.push_back(
          alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)]);
    }
    if (!ids.insert(id).second) continue;
    keys.insert(cache_key(widget(id)));
    prefixes.insert(widget_key_prefix(id));
  }
  BOOST_TEST(keys.size() == ids.size());
  BOOST_TEST(prefixes.size() == ids.size());
  // No widget's prefix is the prefix of another widget's prefix (purges never overreach).
  for (auto it = prefixes.begin(); it != prefixes.end(); ++it) {
    auto next = std::next(it);
    if (next != prefixes.end()) BOOST_TEST(!next->starts_with(*it));
  }
}

BOOST_AUTO_TEST_CASE(a_key_gives_back_the_request_it_was_built_from) {
  const std::vector<ApiRequest> requests = {
      widget("abc"),
      widget("x}:w"),
      widget(std::string("\0/\xff", 3)),
      reviews("abc", 20),
      reviews("a b", 300, 1000000000, Platform::googleMap),
      reviews("w%25", 1, 7, Platform::yaBusiness),
  };
  for (const ApiRequest& request : requests) {
    const std::string key = cache_key(request);
    BOOST_TEST_CONTEXT(key) {
      auto back = request_of_key(key);
      BOOST_TEST_REQUIRE(back.has_value());
      BOOST_TEST((*back == request));
    }
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string id(1 + rng() % 12, '\0');
    for (char& c : id) c = static_cast<char>(rng() % 256);
    ApiRequest request = rng() % 2 ? widget(id) : reviews(id, 1 + rng() % 300, rng() % 5000);
    auto back = request_of_key(cache_key(request));
    BOOST_TEST_REQUIRE(back.has_value());
    BOOST_TEST((*back == request));
  }
}

BOOST_AUTO_TEST_CASE(a_key_no_valid_request_makes_gives_nothing) {
  for (std::string_view key : {
           "",
           "wg:{}:w",
           "wg:{abc}:x",
           "wg:{abc}:w:",
           "wg:abc:w",
           "wg:{abc}",
           "wg:{abc}:r:*:20",
           "wg:{abc}:r:*:0:0",
           "wg:{abc}:r:*:301:0",
           "wg:{abc}:r:*:20:1000000001",
           "wg:{abc}:r:*:020:0",
           "wg:{abc}:r:*:20:-1",
           "wg:{abc}:r:*:20:0x",
           "wg:{abc}:r:googlemap:20:0",
           "wg:{abc}:r::20:0",
           "wg:{a%3ab}:w",  // lower-case hex: escape_key_id writes upper case
           "wg:{a%62c}:w",  // an escaped safe byte
           "wg:{a%2}:w",
           "wg:{a b}:w",
           "xx:{abc}:w",
       }) {
    BOOST_TEST(!request_of_key(key).has_value(), key);
  }
  BOOST_TEST(
      !request_of_key(cache_key(widget(std::string(kMaxWidgetIdBytes + 1, 'a')))).has_value());
}

BOOST_AUTO_TEST_CASE(upstream_targets) {
  BOOST_TEST(upstream_target(widget("abc")) == "/api/v1/widgets/widget/abc/remote");
  BOOST_TEST(upstream_target(reviews("abc", 20)) ==
             "/api/v1/widgets/widget/abc/reviews/remote?limit=20&skip=0");
  BOOST_TEST(upstream_target(reviews("abc", 5, 15, Platform::yaBusiness)) ==
             "/api/v1/widgets/widget/abc/reviews/remote?limit=5&skip=15&type=yaBusiness");
  // The id is encoded outside unreserved characters.
  BOOST_TEST(upstream_target(widget("a.b~c-d_e")) == "/api/v1/widgets/widget/a.b~c-d_e/remote");
  BOOST_TEST(upstream_target(widget("a/b?c#d e%")) ==
             "/api/v1/widgets/widget/a%2Fb%3Fc%23d%20e%25/remote");
  BOOST_TEST(upstream_target(widget(std::string("\0\xff", 2))) ==
             "/api/v1/widgets/widget/%00%FF/remote");
  // Never a dot-segment.
  BOOST_TEST(upstream_target(widget(".")) == "/api/v1/widgets/widget/%2E/remote");
  BOOST_TEST(upstream_target(widget("..")) == "/api/v1/widgets/widget/%2E%2E/remote");
  BOOST_TEST(upstream_target(widget("...")) == "/api/v1/widgets/widget/.../remote");
}

BOOST_AUTO_TEST_SUITE_END()  // keys_test
