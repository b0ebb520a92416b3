#include <boost/test/unit_test.hpp>

#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "widget_gateway/api/widget_policy.hpp"

using wg::api::kDefaultWidgetPattern;
using wg::api::WidgetPolicy;

namespace {

// Deterministic inputs around the interesting edges: lengths 0..70 (the limit is 64), valid
// characters, and bytes that must be refused (NUL, '/', ';', newline, dots, non-ASCII...).
std::vector<std::string> generated_ids(std::size_t count) {
  static const std::string valid =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
  static const std::string invalid =
      std::string("\0/;\n\r.% ~+{}$^[]\\:@?#&=,\t\x7f\x80\xc3\xff", 30);
  std::mt19937_64 rng(20260101);
  std::vector<std::string> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t length = std::uniform_int_distribution<std::size_t>(0, 70)(rng);
    if (i % 4 == 0) length = std::uniform_int_distribution<std::size_t>(62, 66)(rng);
    std::string id;
    for (std::size_t k = 0; k < length; ++k) {
      id.push_back(valid[std::uniform_int_distribution<std::size_t>(0, valid.size() - 1)(rng)]);
    }
    // Half of them get one or two bad bytes somewhere (start, middle or end).
    if (i % 2 == 1) {
      int bad = 1 + static_cast<int>(i % 3 == 0);
      for (int b = 0; b < bad; ++b) {
        std::size_t pos = std::uniform_int_distribution<std::size_t>(0, id.size())(rng);
        char c = invalid[std::uniform_int_distribution<std::size_t>(0, invalid.size() - 1)(rng)];
        id.insert(id.begin() + static_cast<std::ptrdiff_t>(pos), c);
      }
    }
    out.push_back(std::move(id));
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(widget_policy_test)

BOOST_AUTO_TEST_CASE(default_pattern_fast_path_equals_std_regex) {
  const std::regex reference(std::string(kDefaultWidgetPattern), std::regex::ECMAScript);
  // A pattern with the same meaning but a different spelling takes the std::regex path.
  const WidgetPolicy via_regex("^(?:[A-Za-z0-9_-]{1,64})$", {});
  const WidgetPolicy fast;
  auto ids = generated_ids(20000);
  for (const std::string& extra :
       std::vector<std::string>{"", "a", "abc\n", "\nabc", "abc\r\n", std::string("a\0b", 3),
                                std::string(64, 'z'), std::string(65, 'z'), "-", "_", "--", "0"}) {
    ids.push_back(extra);
  }
  std::size_t accepted = 0;
  for (const auto& id : ids) {
    bool expected = std::regex_match(id, reference);
    accepted += expected;
    BOOST_TEST_CONTEXT("id of " << id.size() << " bytes: '" << id << "'") {
      BOOST_TEST(fast.allows(id) == expected);
      BOOST_TEST(wg::api::matches_default_widget_pattern(id) == expected);
      BOOST_TEST(via_regex.allows(id) == expected);
    }
  }
  // The generator must produce both outcomes in quantity, or the comparison proves little.
  BOOST_TEST(accepted > ids.size() / 5);
  BOOST_TEST(accepted < ids.size() * 4 / 5);
}

BOOST_AUTO_TEST_CASE(default_pattern_examples) {
  WidgetPolicy p;
  BOOST_TEST(p.allows("5f1b2c3d4e5f6a7b8c9d0e1f"));
  BOOST_TEST(p.allows("a"));
  BOOST_TEST(p.allows(std::string(64, '9')));
  BOOST_TEST(!p.allows(""));
  BOOST_TEST(!p.allows(std::string(65, '9')));
  BOOST_TEST(!p.allows("a/b"));
  BOOST_TEST(!p.allows("a;b"));
  BOOST_TEST(!p.allows(std::string("a\0", 2)));
  BOOST_TEST(!p.allows(".."));
  BOOST_TEST(!p.allows("\xc3\xa9"));
}

BOOST_AUTO_TEST_CASE(custom_pattern_is_a_full_match) {
  WidgetPolicy p("[a-c]+", {});  // no anchors: still a full match
  BOOST_TEST(p.allows("abc"));
  BOOST_TEST(!p.allows("abcd"));
  BOOST_TEST(!p.allows("xabc"));
  BOOST_TEST(!p.allows(""));
  WidgetPolicy any(".*", {});
  BOOST_TEST(any.allows(""));
  BOOST_TEST(any.allows(std::string(wg::api::kMaxWidgetIdBytes, 'x')));
  BOOST_TEST(!any.allows(std::string(wg::api::kMaxWidgetIdBytes + 1, 'x')));
}

BOOST_AUTO_TEST_CASE(invalid_pattern_throws_at_construction) {
  BOOST_CHECK_THROW(WidgetPolicy("[a-", {}), std::regex_error);
  BOOST_CHECK_THROW(WidgetPolicy("(", {}), std::regex_error);
}

BOOST_AUTO_TEST_CASE(long_counts_and_back_references_are_refused_before_compiling) {
  // libstdc++ would read these numbers into a long without checking (undefined behaviour).
  BOOST_CHECK_THROW(WidgetPolicy("^a{22222222222222222222}$", {}), std::regex_error);
  BOOST_CHECK_THROW(WidgetPolicy("^a{1,22222222222222222222}$", {}), std::regex_error);
  BOOST_CHECK_THROW(WidgetPolicy("^(a)\\22222222222222222222$", {}), std::regex_error);
  BOOST_CHECK_THROW(WidgetPolicy("^a{1000}$", {}), std::regex_error);
  // In "\c\\2..." the "\c\" is a control escape, and "\2..." a back-reference all the same.
  BOOST_CHECK_THROW(WidgetPolicy("^\\c\\\\22222222222222222222$", {}), std::regex_error);
  // Short ones, and long digit runs that are characters, are patterns like any other.
  BOOST_TEST(WidgetPolicy("^a{2,256}$", {}).allows("aaa"));
  BOOST_TEST(WidgetPolicy("^(a)\\1$", {}).allows("aa"));
  BOOST_TEST(WidgetPolicy("^w-1234567$", {}).allows("w-1234567"));
}

BOOST_AUTO_TEST_CASE(allowlist) {
  WidgetPolicy p(std::string(kDefaultWidgetPattern), {"zeta", "alpha", "alpha", "m-1"});
  BOOST_TEST(p.allows("alpha"));
  BOOST_TEST(p.allows("zeta"));
  BOOST_TEST(p.allows("m-1"));
  BOOST_TEST(!p.allows("beta"));
  BOOST_TEST(!p.allows("alph"));
  BOOST_TEST(!p.allows("alphaa"));
  // Both the pattern and the allowlist must agree.
  WidgetPolicy q(std::string(kDefaultWidgetPattern), {"a/b", "ok"});
  BOOST_TEST(!q.allows("a/b"));
  BOOST_TEST(q.allows("ok"));
}

BOOST_AUTO_TEST_CASE(concurrent_use) {
  const WidgetPolicy custom("^[a-z0-9]{1,20}$", {});
  const WidgetPolicy fast;
  auto ids = generated_ids(2000);
  std::vector<int> expected_custom, expected_fast;
  for (const auto& id : ids) {
    expected_custom.push_back(custom.allows(id));
    expected_fast.push_back(fast.allows(id));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (std::size_t i = 0; i < ids.size(); ++i) {
          if (custom.allows(ids[i]) != static_cast<bool>(expected_custom[i])) ++mismatches[t];
          if (fast.allows(ids[i]) != static_cast<bool>(expected_fast[i])) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) BOOST_TEST(m == 0);
}

BOOST_AUTO_TEST_SUITE_END()  // widget_policy_test
