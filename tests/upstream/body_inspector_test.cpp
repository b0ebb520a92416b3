#include <boost/test/unit_test.hpp>

#include <string>

#include "widget_gateway/upstream/body_inspector.hpp"

using wg::upstream::inspect_reviews_body;
using wg::upstream::inspect_widget_body;

namespace {

const std::string kWidget = R"({"_id":"w1","title":"Кафе \"Уют\"","url":"https://example.test/",)"
                            R"("totalRating":4.7,"totalReviewAmount":1234,)"
                            R"("reviewAmount":{"yaSprav":1000,"googleMap":234},)"
                            R"("reviewStars":{"one":1,"two":2,"three":3,"four":4,"five":5},)"
                            R"("googleMapRating":4.5,)"
                            R"("sources":[{"type":"yaSprav","url":"https://a.test/x",)"
                            R"("updatedAt":"2024-01-01T00:00:00Z"},)"
                            R"({"type":"googleMap","url":"https://b.test/y"}],)"
                            R"("customSettings":{"nested":{"deep":[1,[2,{"x":null}]]}}})";

const std::string kReview1 =
    R"({"_id":"r1","name":"Анна","photo":"https://p.test/a.jpg","message":"Всё \"отлично\", спасибо!\n\u263a [ok]","rating":5,"date":"2024-01-02T10:00:00Z","src":"https://s.test/1","type":"yaSprav"})";
const std::string kReview2 =
    R"({"_id":"r2","name":"Bob \\ Smith","photo":"","images":["https://i.test/1.jpg","https://i.test/2.jpg"],"src":"https://s.test/2","type":"googleMap","extra":{"a":[{},{"b":"}]"}]}})";
const std::string kReview3 = R"({"_id":"r3","name":"C","photo":"","src":"","type":"avito"})";

std::string compact_reviews() {
  return "[" + kReview1 + "," + kReview2 + "," + kReview3 + "]";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(body_inspector_test)

BOOST_AUTO_TEST_CASE(widget_fields_are_extracted) {
  auto summary = inspect_widget_body(kWidget);
  BOOST_REQUIRE(summary);
  BOOST_TEST(summary->total_review_amount == 1234u);
  BOOST_REQUIRE_EQUAL(summary->review_amount.size(), 2u);
  BOOST_TEST(summary->review_amount[0].first == "yaSprav");
  BOOST_TEST(summary->review_amount[0].second == 1000u);
  BOOST_TEST(summary->review_amount[1].first == "googleMap");
  BOOST_TEST(summary->review_amount[1].second == 234u);
  BOOST_REQUIRE_EQUAL(summary->source_types.size(), 2u);
  BOOST_TEST(summary->source_types[0] == "yaSprav");
  BOOST_TEST(summary->source_types[1] == "googleMap");
}

BOOST_AUTO_TEST_CASE(widget_minimal_shape) {
  auto minimal = inspect_widget_body(R"({"totalReviewAmount":0,"reviewAmount":{}})");
  BOOST_REQUIRE(minimal);
  BOOST_TEST(minimal->total_review_amount == 0u);
  BOOST_TEST(minimal->review_amount.empty());
  BOOST_TEST(minimal->source_types.empty());

  auto no_sources = inspect_widget_body(R"({"reviewAmount":{"zoon":2},"totalReviewAmount":2})");
  BOOST_REQUIRE(no_sources);
  BOOST_TEST(no_sources->total_review_amount == 2u);
  BOOST_REQUIRE_EQUAL(no_sources->review_amount.size(), 1u);
  BOOST_TEST(no_sources->review_amount[0].first == "zoon");
  BOOST_TEST(no_sources->review_amount[0].second == 2u);
  BOOST_TEST(no_sources->source_types.empty());

  BOOST_TEST(
      inspect_widget_body(R"({"totalReviewAmount":0,"reviewAmount":{},"sources":[]})").has_value());
}

BOOST_AUTO_TEST_CASE(widget_counts_are_non_negative_integers) {
  const auto total = [](const std::string& value) {
    return inspect_widget_body(R"({"totalReviewAmount":)" + value + R"(,"reviewAmount":{}})");
  };
  BOOST_TEST(total("0")->total_review_amount == 0u);
  BOOST_TEST(total("-0")->total_review_amount == 0u);  // an integer to simdjson
  BOOST_TEST(total("9223372036854775807")->total_review_amount == 9223372036854775807u);
  BOOST_TEST(total("18446744073709551615")->total_review_amount == 18446744073709551615u);
  for (const char* bad :
       {"-1", "1.5", "12.0", "1.2e1", "1e2", "0.0", "-0.0", "18446744073709551616", "\"12\"",
        "\"many\"", "null", "true", "[]", "{}"}) {
    BOOST_TEST_CONTEXT("totalReviewAmount " << bad) {
      BOOST_TEST(!total(bad));
    }
  }

  const auto amounts = [](const std::string& object) {
    return inspect_widget_body(R"({"totalReviewAmount":3,"reviewAmount":)" + object + "}");
  };
  auto three = amounts(R"({"avito":2,"doubleGis":1,"zoon":0})");
  BOOST_REQUIRE(three);
  BOOST_REQUIRE_EQUAL(three->review_amount.size(), 3u);
  BOOST_TEST(three->review_amount[1].first == "doubleGis");
  BOOST_TEST(three->review_amount[1].second == 1u);
  // One bad value spoils the whole body.
  for (const char* bad : {R"({"avito":2,"zoon":-3})", R"({"avito":2.0})", R"({"avito":1.5})",
                          R"({"avito":"2"})", R"({"avito":null})", R"({"avito":{}})",
                          R"({"avito":[1]})", "[]", "[1,2]", "null", "0", "\"x\""}) {
    BOOST_TEST_CONTEXT("reviewAmount " << bad) {
      BOOST_TEST(!amounts(bad));
    }
  }
}

BOOST_AUTO_TEST_CASE(widget_required_fields) {
  BOOST_TEST(!inspect_widget_body("{}"));
  BOOST_TEST(!inspect_widget_body(R"({"totalReviewAmount":3})"));
  BOOST_TEST(!inspect_widget_body(R"({"reviewAmount":{"zoon":3}})"));
  BOOST_TEST(!inspect_widget_body(R"({"TotalReviewAmount":3,"reviewAmount":{}})"));
  BOOST_TEST(!inspect_widget_body(R"({"_id":"w1","title":"Кафе","totalReviewAmount":3})"));
}

BOOST_AUTO_TEST_CASE(widget_sources_must_be_an_array) {
  const auto with_sources = [](const std::string& sources) {
    return inspect_widget_body(R"({"totalReviewAmount":1,"reviewAmount":{"zoon":1},"sources":)" +
                               sources + "}");
  };
  // Entries without a string `type` are skipped, not fatal.
  auto odd = with_sources(R"([{"url":"no type"},5,null,[],{"type":3},{"type":"zoon"}])");
  BOOST_REQUIRE(odd);
  BOOST_REQUIRE_EQUAL(odd->source_types.size(), 1u);
  BOOST_TEST(odd->source_types[0] == "zoon");
  for (const char* bad : {"{}", R"({"type":"zoon"})", "null", "\"zoon\"", "0", "false"}) {
    BOOST_TEST_CONTEXT("sources " << bad) {
      BOOST_TEST(!with_sources(bad));
    }
  }
}

BOOST_AUTO_TEST_CASE(widget_whitespace_around_is_fine) {
  BOOST_TEST(
      inspect_widget_body(" \r\n\t{ \"totalReviewAmount\" : 3 , \"reviewAmount\" : { } }\n \t")
          .has_value());
}

BOOST_AUTO_TEST_CASE(widget_rejects_non_objects_and_garbage) {
  BOOST_TEST(!inspect_widget_body(""));
  BOOST_TEST(!inspect_widget_body("   "));
  BOOST_TEST(!inspect_widget_body("[]"));
  BOOST_TEST(!inspect_widget_body("[{}]"));
  BOOST_TEST(!inspect_widget_body("\"text\""));
  BOOST_TEST(!inspect_widget_body("42"));
  BOOST_TEST(!inspect_widget_body("null"));
  BOOST_TEST(!inspect_widget_body("<html>502 Bad Gateway</html>"));
  BOOST_TEST(!inspect_widget_body("{} x"));
  BOOST_TEST(!inspect_widget_body("{}{}"));
  BOOST_TEST(!inspect_widget_body("{},"));
  BOOST_TEST(!inspect_widget_body(std::string("{}\0", 3)));
  BOOST_TEST(!inspect_widget_body(R"({"a":1,})"));
  BOOST_TEST(!inspect_widget_body(R"({"a":tru})"));
  BOOST_TEST(!inspect_widget_body(R"({"a":"\x"})"));
  BOOST_TEST(!inspect_widget_body("{\"a\":\"\xff\xfe\"}"));  // not UTF-8
  BOOST_TEST(!inspect_widget_body(kWidget + "]"));
}

BOOST_AUTO_TEST_CASE(widget_every_truncation_is_rejected) {
  for (std::size_t n = 0; n < kWidget.size(); ++n) {
    BOOST_TEST_CONTEXT("prefix length " << n) {
      BOOST_TEST(!inspect_widget_body(std::string_view(kWidget).substr(0, n)));
    }
  }
}

BOOST_AUTO_TEST_CASE(reviews_element_spans_are_exact) {
  const std::string body = compact_reviews();
  auto summary = inspect_reviews_body(body);
  BOOST_REQUIRE(summary);
  BOOST_REQUIRE_EQUAL(summary->elements.size(), 3u);
  BOOST_TEST(summary->elements[0] == kReview1);
  BOOST_TEST(summary->elements[1] == kReview2);
  BOOST_TEST(summary->elements[2] == kReview3);
  // The views point into the body itself.
  BOOST_TEST(summary->elements[0].data() == body.data() + 1);

  std::string rebuilt = "[";
  for (std::size_t i = 0; i < summary->elements.size(); ++i) {
    if (i) rebuilt += ",";
    rebuilt += summary->elements[i];
  }
  rebuilt += "]";
  BOOST_TEST(rebuilt == body);
}

BOOST_AUTO_TEST_CASE(reviews_spans_exclude_whitespace_and_commas) {
  const std::string body =
      " [\n  " + kReview1 + " ,\n\t" + kReview2 + "\r\n,  " + kReview3 + "\n] \n";
  auto summary = inspect_reviews_body(body);
  BOOST_REQUIRE(summary);
  BOOST_REQUIRE_EQUAL(summary->elements.size(), 3u);
  BOOST_TEST(summary->elements[0] == kReview1);
  BOOST_TEST(summary->elements[1] == kReview2);
  BOOST_TEST(summary->elements[2] == kReview3);

  // Whitespace inside an element is part of the element.
  auto spaced = inspect_reviews_body("[ { \"a\" : [ 1 , 2 ] } , {\"b\":\"x , ]\"}]");
  BOOST_REQUIRE(spaced);
  BOOST_REQUIRE_EQUAL(spaced->elements.size(), 2u);
  BOOST_TEST(spaced->elements[0] == "{ \"a\" : [ 1 , 2 ] }");
  BOOST_TEST(spaced->elements[1] == "{\"b\":\"x , ]\"}");
}

BOOST_AUTO_TEST_CASE(reviews_escapes_inside_strings_do_not_confuse_the_split) {
  const std::string a =
      R"({"m":"ends with backslash \\","n":"quote \" and brace } and bracket ]"})";
  const std::string b = R"({"m":"\\\"","u":"\u0022\u005c"})";
  const std::string body = "[" + a + "," + b + "]";
  auto summary = inspect_reviews_body(body);
  BOOST_REQUIRE(summary);
  BOOST_REQUIRE_EQUAL(summary->elements.size(), 2u);
  BOOST_TEST(summary->elements[0] == a);
  BOOST_TEST(summary->elements[1] == b);
}

BOOST_AUTO_TEST_CASE(reviews_empty_array) {
  auto compact = inspect_reviews_body("[]");
  BOOST_REQUIRE(compact);
  BOOST_TEST(compact->elements.empty());
  auto spaced = inspect_reviews_body(" [ \n ] ");
  BOOST_REQUIRE(spaced);
  BOOST_TEST(spaced->elements.empty());
}

BOOST_AUTO_TEST_CASE(reviews_rejects_wrong_shapes_and_garbage) {
  BOOST_TEST(!inspect_reviews_body(""));
  BOOST_TEST(!inspect_reviews_body("{}"));
  BOOST_TEST(!inspect_reviews_body("[1,2]"));
  BOOST_TEST(!inspect_reviews_body("[{},\"x\"]"));
  BOOST_TEST(!inspect_reviews_body("[{},[]]"));
  BOOST_TEST(!inspect_reviews_body("[{},null]"));
  BOOST_TEST(!inspect_reviews_body("[{},]"));
  BOOST_TEST(!inspect_reviews_body("[,{}]"));
  BOOST_TEST(!inspect_reviews_body("[{}] []"));
  BOOST_TEST(!inspect_reviews_body("[{}]x"));
  BOOST_TEST(!inspect_reviews_body("not json"));
  BOOST_TEST(!inspect_reviews_body("[{\"a\":\"unterminated}]"));
}

BOOST_AUTO_TEST_CASE(reviews_every_truncation_is_rejected) {
  const std::string body = compact_reviews();
  for (std::size_t n = 0; n < body.size(); ++n) {
    BOOST_TEST_CONTEXT("prefix length " << n) {
      BOOST_TEST(!inspect_reviews_body(std::string_view(body).substr(0, n)));
    }
  }
}

BOOST_AUTO_TEST_CASE(widget_counts_that_contradict_each_other) {
  BOOST_TEST(inspect_widget_body(kWidget)->consistent);  // 1000 + 234, stars 15 of 1234
  BOOST_TEST(inspect_widget_body(R"({"totalReviewAmount":0,"reviewAmount":{}})")->consistent);
  auto check = [](const std::string& amounts, const std::string& stars) {
    return inspect_widget_body(R"({"totalReviewAmount":10,"reviewAmount":)" + amounts +
                               (stars.empty() ? "" : R"(,"reviewStars":)" + stars) + "}")
        ->consistent;
  };
  BOOST_TEST(check(R"({"zoon":4,"avito":6})", ""));
  BOOST_TEST(!check(R"({"zoon":4,"avito":7})", ""));  // adds up to 11
  BOOST_TEST(!check(R"({"zoon":4})", ""));            // to 4
  BOOST_TEST(!check("{}", ""));                       // 10 reviews from no platform
  BOOST_TEST(check(R"({"zoon":10})", R"({"one":1,"five":9})"));
  BOOST_TEST(check(R"({"zoon":10})", R"({"one":0})"));            // unrated reviews are not stars
  BOOST_TEST(!check(R"({"zoon":10})", R"({"one":2,"five":9})"));  // 11 stars of 10 reviews
  BOOST_TEST(check(R"({"zoon":10})", R"({"one":"x"})"));          // not counts: not read
  // Sums past 2^64 do not wrap into agreement.
  BOOST_TEST(!inspect_widget_body(
                  R"({"totalReviewAmount":1,"reviewAmount":{"a":18446744073709551615,"b":2}})")
                  ->consistent);
}

BOOST_AUTO_TEST_SUITE_END()  // body_inspector_test
