#include <boost/test/unit_test.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <simdjson.h>

#include "upstream-stub/dataset.hpp"

using wg::stub::Dataset;
using wg::stub::kPlatforms;
using wg::stub::RenderedWidget;

namespace {

simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& text) {
  simdjson::dom::element doc;
  const auto error = parser.parse(text).get(doc);
  BOOST_REQUIRE_MESSAGE(
      !error, "not JSON: " << simdjson::error_message(error) << ": " << text.substr(0, 200));
  return doc;
}

bool has_cyrillic(std::string_view text) {
  // Cyrillic letters are two-byte UTF-8 sequences led by 0xD0 or 0xD1.
  for (unsigned char c : text) {
    if (c == 0xD0 || c == 0xD1) return true;
  }
  return false;
}

bool is_object_id(std::string_view id) {
  if (id.size() != 24) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string join_elements(const RenderedWidget& w, std::size_t begin, std::size_t end) {
  std::string out = "[";
  for (std::size_t i = begin; i < end; ++i) {
    if (i != begin) out += ",";
    out += w.review(i);
  }
  return out + "]";
}

// Checks one widget's body and reviews against each other; returns the review types in order.
void check_widget(const Dataset& dataset, std::size_t index) {
  const auto rendered = dataset.rendered(index);
  const auto& plan = dataset.plan(index);
  simdjson::dom::parser parser;
  const auto body = parse(parser, rendered->body());

  BOOST_TEST(std::string(body["_id"].get_string().value()) == plan.id);
  BOOST_TEST(has_cyrillic(body["title"].get_string().value()));
  BOOST_TEST(std::string(body["url"].get_string().value()).starts_with("https://"));
  BOOST_TEST(body["totalRating"].is_number());
  const auto total = body["totalReviewAmount"].get_uint64().value();
  BOOST_TEST(total == plan.total_reviews);
  BOOST_TEST(total == rendered->review_count());
  BOOST_TEST(body["customSettings"].is_object());
  BOOST_TEST(body["customStyles"].is_object());

  std::map<std::string, std::uint64_t> amounts;
  for (auto [key, value] : body["reviewAmount"].get_object()) {
    amounts[std::string(key)] = value.get_uint64().value();
    BOOST_TEST(body[std::string(key) + "Rating"].is_number());
  }
  std::uint64_t sum = 0;
  for (const auto& [code, count] : amounts) sum += count;
  BOOST_TEST(sum == total);
  std::set<std::string> source_types;
  for (auto source : body["sources"].get_array()) {
    source_types.insert(std::string(source["type"].get_string().value()));
    BOOST_TEST(std::string(source["url"].get_string().value()).starts_with("https://"));
    BOOST_TEST(source["updatedAt"].get_string().value().size() == 24u);  // ISO 8601 with ms
  }
  std::set<std::string> amount_types;
  for (const auto& [code, count] : amounts) amount_types.insert(code);
  BOOST_TEST(source_types == amount_types);
  for (auto code : kPlatforms) {
    if (!amount_types.count(std::string(code))) {
      BOOST_TEST(body[std::string(code) + "Rating"].error() == simdjson::NO_SUCH_FIELD);
    }
  }
  std::array<std::uint64_t, 5> stars{};
  const char* star_names[] = {"one", "two", "three", "four", "five"};
  for (int s = 0; s < 5; ++s) stars[s] = body["reviewStars"][star_names[s]].get_uint64().value();

  // Every review, in order.
  const std::string all = rendered->page(0, rendered->review_count());
  simdjson::dom::parser review_parser;
  const auto reviews = parse(review_parser, all);
  std::map<std::string, std::uint64_t> counted;
  std::array<std::uint64_t, 5> rated{};
  std::string previous_date = "9999";
  for (auto review : reviews.get_array()) {
    BOOST_TEST(is_object_id(review["_id"].get_string().value()));
    BOOST_TEST(!review["name"].get_string().value().empty());
    BOOST_TEST(review["photo"].is_string());
    BOOST_TEST(review["src"].is_string());
    const std::string type(review["type"].get_string().value());
    BOOST_TEST(amount_types.count(type) == 1u);
    ++counted[type];
    if (review["rating"].error() != simdjson::NO_SUCH_FIELD) {
      const auto r = review["rating"].get_uint64().value();
      BOOST_TEST((r >= 1 && r <= 5));
      ++rated[r - 1];
    }
    if (review["date"].error() != simdjson::NO_SUCH_FIELD) {
      const std::string date(review["date"].get_string().value());
      BOOST_TEST((date < previous_date), date << " after " << previous_date);  // newest first
      previous_date = date;
    }
    if (review["message"].error() != simdjson::NO_SUCH_FIELD)
      BOOST_TEST(review["message"].is_string());
    if (review["images"].error() != simdjson::NO_SUCH_FIELD)
      BOOST_TEST(review["images"].is_array());
  }
  for (const auto& [code, count] : amounts) BOOST_TEST(counted[code] == count, code);
  for (int s = 0; s < 5; ++s) BOOST_TEST(stars[s] == rated[s]);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dataset_test)

BOOST_AUTO_TEST_CASE(platform_codes) {
  BOOST_TEST(kPlatforms.size() == 9u);
  BOOST_TEST(wg::stub::platform_index("googleMap").value() == 7u);
  BOOST_TEST(!wg::stub::platform_index("GoogleMap"));
  BOOST_TEST(!wg::stub::platform_index(""));
}

BOOST_AUTO_TEST_CASE(same_seed_same_bytes) {
  const Dataset a(7, 50), b(7, 50);
  for (std::size_t i = 0; i < 50; ++i) {
    BOOST_TEST(a.id(i) == b.id(i));
    BOOST_TEST(a.rendered(i)->body() == b.rendered(i)->body());
    BOOST_TEST(a.rendered(i)->page(0, 1000) == b.rendered(i)->page(0, 1000));
  }
  BOOST_TEST(a.listing() == b.listing());
  // A data set of a different size shares its prefix.
  const Dataset bigger(7, 500);
  BOOST_TEST(bigger.rendered(3)->body() == a.rendered(3)->body());
}

BOOST_AUTO_TEST_CASE(different_seed_different_ids) {
  const Dataset a(1, 100), b(2, 100);
  for (std::size_t i = 0; i < 100; ++i) {
    BOOST_TEST(a.id(i) != b.id(i));
    BOOST_TEST(!b.find(a.id(i)));
  }
}

BOOST_AUTO_TEST_CASE(ids_are_object_ids_and_unique) {
  const Dataset dataset(1, 10000);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    BOOST_TEST_REQUIRE(is_object_id(dataset.id(i)));
    ids.insert(dataset.id(i));
    BOOST_TEST_REQUIRE(dataset.find(dataset.id(i)).value() == i);
  }
  BOOST_TEST(ids.size() == 10000u);
  BOOST_TEST(!dataset.find("000000000000000000000000"));
  BOOST_TEST(!dataset.find(""));
}

BOOST_AUTO_TEST_CASE(fixed_shapes) {
  for (std::uint64_t seed : {1, 2, 42}) {
    const Dataset dataset(seed, 10);
    const auto w0 = dataset.rendered(0);
    BOOST_TEST(w0->review_count() == 700u);
    BOOST_TEST(dataset.plan(0).platforms.size() >= 3u);

    const auto w1 = dataset.rendered(1);
    BOOST_TEST(w1->review_count() == 0u);
    BOOST_TEST(w1->page(0, 10) == "[]");
    simdjson::dom::parser parser;
    const auto body1 = parse(parser, w1->body());
    BOOST_TEST(body1["sources"].get_array().size() == 0u);
    BOOST_TEST(body1["reviewAmount"].get_object().size() == 0u);
    BOOST_TEST(body1["totalReviewAmount"].get_uint64().value() == 0u);

    const auto w2 = dataset.rendered(2);
    const auto google = wg::stub::platform_index("googleMap");
    BOOST_TEST(w2->review_count() == 12u);
    BOOST_TEST(w2->review_count(google) == 12u);
    simdjson::dom::parser parser2;
    const auto body2 = parse(parser2, w2->body());
    BOOST_TEST(body2["sources"].get_array().size() == 1u);
    BOOST_TEST(std::string(body2["sources"].at(0)["type"].get_string().value()) == "googleMap");
  }
}

BOOST_AUTO_TEST_CASE(bodies_are_consistent_json) {
  const Dataset dataset(1, 60);
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    BOOST_TEST_CONTEXT("widget " << i) {
      check_widget(dataset, i);
    }
  }
  const Dataset other(99, 20);
  for (std::size_t i = 0; i < other.size(); ++i) {
    BOOST_TEST_CONTEXT("seed 99 widget " << i) {
      check_widget(other, i);
    }
  }
}

BOOST_AUTO_TEST_CASE(widget_bodies_are_a_few_kilobytes) {
  const Dataset dataset(1, 100);
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const auto size = dataset.rendered(i)->body().size();
    BOOST_TEST((size >= 2000 && size <= 4096), "widget " << i << " body is " << size << " bytes");
  }
}

BOOST_AUTO_TEST_CASE(pages_are_slices_of_one_order) {
  const Dataset dataset(3, 5);
  const auto w = dataset.rendered(0);
  const std::size_t n = w->review_count();
  // The whole list fetched as pages of 300 ...
  std::string assembled;
  for (std::size_t skip = 0; skip < n; skip += 300) {
    const std::string page = w->page(skip, 300);
    BOOST_TEST(page == join_elements(*w, skip, std::min(n, skip + 300)));
    if (!assembled.empty()) assembled += ",";
    assembled += page.substr(1, page.size() - 2);
  }
  BOOST_TEST("[" + assembled + "]" == w->page(0, n));
  // ... and page N with another limit is elements [N*L, N*L+L) of it.
  for (std::size_t limit : {1, 7, 50, 299}) {
    for (std::size_t page = 0; page * limit < n + limit; ++page) {
      const std::size_t begin = std::min(n, page * limit), end = std::min(n, page * limit + limit);
      BOOST_TEST_REQUIRE(w->page(page * limit, limit) == join_elements(*w, begin, end));
    }
  }
  BOOST_TEST(w->page(n, 10) == "[]");
  BOOST_TEST(w->page(n + 1000, 10) == "[]");
  BOOST_TEST(w->page(0, 0) == "[]");
}

BOOST_AUTO_TEST_CASE(type_filter_is_the_order_filtered) {
  const Dataset dataset(1, 5);
  const auto w = dataset.rendered(0);
  simdjson::dom::parser parser;
  for (const auto& [platform, count] : dataset.plan(0).platforms) {
    const std::string code(kPlatforms[platform]);
    BOOST_TEST(w->review_count(platform) == count);
    std::vector<std::string_view> expected;
    for (std::size_t i = 0; i < w->review_count(); ++i) {
      if (w->review(i).find("\"type\":\"" + code + "\"") != std::string_view::npos) {
        expected.push_back(w->review(i));
      }
    }
    BOOST_TEST(expected.size() == count);
    std::string joined = "[";
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (i) joined += ",";
      joined += expected[i];
    }
    joined += "]";
    BOOST_TEST(w->page(0, 1000, platform) == joined);
    // Paged within the filter.
    if (count > 5) {
      BOOST_TEST(w->page(2, 3, platform) == "[" + std::string(expected[2]) + "," +
                                                std::string(expected[3]) + "," +
                                                std::string(expected[4]) + "]");
    }
    const auto page = parse(parser, w->page(0, 300, platform));
    for (auto review : page.get_array()) {
      BOOST_TEST(std::string(review["type"].get_string().value()) == code);
    }
  }
  // A platform the widget does not link has no reviews.
  for (std::size_t p = 0; p < kPlatforms.size(); ++p) {
    bool linked = false;
    for (const auto& [platform, count] : dataset.plan(0).platforms) linked |= platform == p;
    if (!linked) BOOST_TEST(w->page(0, 10, p) == "[]");
  }
}

BOOST_AUTO_TEST_CASE(texts_are_cyrillic_with_escapes_and_optional_fields) {
  const Dataset dataset(1, 3);
  const auto w = dataset.rendered(0);
  const std::string all = w->page(0, w->review_count());
  BOOST_TEST(has_cyrillic(all));
  BOOST_TEST(all.find("\\\"") != std::string::npos);      // escaped quote
  BOOST_TEST(all.find("\\\\") != std::string::npos);      // escaped backslash
  BOOST_TEST(all.find("\\n") != std::string::npos);       // escaped newline
  BOOST_TEST(all.find("\xF0\x9F") != std::string::npos);  // raw 4-byte UTF-8 (emoji)
  BOOST_TEST(all.find("\\u04") == std::string::npos);     // Cyrillic not \u-escaped
  BOOST_TEST(all.find('\n') == std::string::npos);        // compact, no raw newlines

  std::map<std::string, std::size_t> present;
  simdjson::dom::parser parser;
  const auto reviews = parse(parser, all);
  for (auto review : reviews.get_array()) {
    for (auto [key, value] : review.get_object()) ++present[std::string(key)];
  }
  for (const char* always : {"_id", "name", "photo", "src", "type"}) {
    BOOST_TEST(present[always] == 700u, always);
  }
  for (const char* optional : {"message", "images", "rating", "date"}) {
    BOOST_TEST(present[optional] > 0u, optional);
    BOOST_TEST(present[optional] < 700u, optional);
  }
}

BOOST_AUTO_TEST_CASE(review_counts_spread) {
  const Dataset dataset(1, 2000);
  std::size_t zero = 0, under_300 = 0, over_300 = 0;
  for (std::size_t i = 3; i < dataset.size(); ++i) {
    const auto total = dataset.plan(i).total_reviews;
    BOOST_TEST_REQUIRE(total <= 1000u);
    zero += total == 0;
    under_300 += total < 300;
    over_300 += total >= 300;
  }
  BOOST_TEST(zero > 0u);
  BOOST_TEST(over_300 > 0u);
  BOOST_TEST(under_300 > over_300 * 4);
}

BOOST_AUTO_TEST_CASE(cache_eviction_rerenders_identical_bytes) {
  const Dataset tiny(1, 10, /*cache_bytes=*/1);  // keeps only the last rendered widget
  const Dataset roomy(1, 10);
  const auto first = tiny.rendered(0)->page(0, 300);
  tiny.rendered(3);
  tiny.rendered(4);
  BOOST_TEST(tiny.rendered(0)->page(0, 300) == first);
  BOOST_TEST(roomy.rendered(0)->page(0, 300) == first);
  BOOST_TEST(roomy.rendered(0).get() == roomy.rendered(0).get());  // cached
}

BOOST_AUTO_TEST_CASE(render_all_fills_the_cache_as_far_as_it_holds) {
  const Dataset roomy(1, 12);
  BOOST_TEST(roomy.render_all() == 12u);
  const auto kept = roomy.rendered(7);
  BOOST_TEST(roomy.render_all() == 12u);  // all there already: the same objects
  BOOST_TEST(roomy.rendered(7).get() == kept.get());
  // A cache that holds one widget stops after the first: rendering on would only evict.
  const Dataset tiny(1, 12, /*cache_bytes=*/1);
  BOOST_TEST(tiny.render_all() == 1u);
}

BOOST_AUTO_TEST_CASE(listing_names_every_widget) {
  const Dataset dataset(5, 40);
  simdjson::dom::parser parser;
  const std::string all = dataset.listing();
  const auto doc = parse(parser, all);
  BOOST_TEST(doc.get_array().size() == 40u);
  std::size_t i = 0;
  for (auto entry : doc.get_array()) {
    BOOST_TEST(std::string(entry["id"].get_string().value()) == dataset.id(i));
    BOOST_TEST(entry["totalReviewAmount"].get_uint64().value() == dataset.plan(i).total_reviews);
    BOOST_TEST(entry["reviewAmount"].get_object().size() == dataset.plan(i).platforms.size());
    ++i;
  }
  BOOST_TEST(dataset.listing(0) == "[]");
  simdjson::dom::parser parser2;
  BOOST_TEST(parse(parser2, dataset.listing(3)).get_array().size() == 3u);
  simdjson::dom::parser parser3;
  BOOST_TEST(parse(parser3, dataset.listing(1000)).get_array().size() == 40u);
}

BOOST_AUTO_TEST_SUITE_END()  // dataset_test
