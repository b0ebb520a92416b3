#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "widget_gateway/client_policy/conditional.hpp"

using wg::client_policy::Coding;
using wg::client_policy::etag_for_coding;
using wg::client_policy::if_none_match_matches;

namespace {

const std::string kTag = "\"0123456789abcdef\"";

struct ConditionalCase {
  std::string if_none_match;
  bool expected;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(conditional_test)

BOOST_AUTO_TEST_CASE(etag_per_coding) {
  BOOST_TEST(etag_for_coding(kTag, Coding::identity) == kTag);
  BOOST_TEST(etag_for_coding(kTag, Coding::gzip) == "\"0123456789abcdef-gz\"");
  BOOST_TEST(etag_for_coding(kTag, Coding::br) == "\"0123456789abcdef-br\"");
  // Every coding's tag is distinct (strong validators differ per representation).
  BOOST_TEST(etag_for_coding(kTag, Coding::gzip) != etag_for_coding(kTag, Coding::br));
  // Not a quoted tag: unchanged.
  BOOST_TEST(etag_for_coding("abc", Coding::gzip) == "abc");
  BOOST_TEST(etag_for_coding("", Coding::br) == "");
}

BOOST_AUTO_TEST_CASE(if_none_match_table) {
  const std::vector<ConditionalCase> cases = {
      // Star.
      {"*", true},
      {" * ", true},
      {"*, \"x\"", false},  // "*" only stands alone
      {"**", false},
      // Exact and weak comparison.
      {"\"0123456789abcdef\"", true},
      {"W/\"0123456789abcdef\"", true},
      {"  \"0123456789abcdef\"  ", true},
      {"\"0123456789abcde\"", false},
      {"\"0123456789abcdef0\"", false},
      {"\"0123456789ABCDEF\"", false},  // opaque tags are case-sensitive
      {"\"\"", false},
      // Any coding of the same body.
      {"\"0123456789abcdef-gz\"", true},
      {"\"0123456789abcdef-br\"", true},
      {"W/\"0123456789abcdef-br\"", true},
      {"\"0123456789abcdef-zz\"", false},
      {"\"0123456789abcdef-gz-br\"", false},
      {"\"0123456789abcdef-\"", false},
      // Lists.
      {"\"a\", \"0123456789abcdef\"", true},
      {"\"a\",\"b\",W/\"0123456789abcdef-gz\"", true},
      {"\"a\", \"b\"", false},
      {", \"0123456789abcdef\" ,", true},
      {"\"a\" , , \"0123456789abcdef\"", true},
      // Malformed: no match at all.
      {"", false},
      {",", false},
      {"0123456789abcdef", false},
      {"\"0123456789abcdef", false},
      {"w/\"0123456789abcdef\"", false},
      {"W/0123456789abcdef", false},
      {"\"0123456789abcdef\" \"x\"", false},
      {"\"a\" junk, \"0123456789abcdef\"", false},
      {"\"0123456789abcdef\", junk", false},
      {"\"0123456789abcdef\", *", false},
      {"\"01234567 89abcdef\"", false},
      {std::string("\"0123456789abcdef\x7f\""), false},
  };
  BOOST_TEST(cases.size() >= 20u);
  for (const auto& c : cases) {
    BOOST_TEST(if_none_match_matches(c.if_none_match, kTag) == c.expected,
               "If-None-Match [" << c.if_none_match << "]");
  }
}

BOOST_AUTO_TEST_CASE(obs_text_tags_parse) {
  // obs-text is a valid etagc; such a tag just does not match ours.
  BOOST_TEST(!if_none_match_matches("\"\xd0\xb0\"", kTag));
  BOOST_TEST(if_none_match_matches("\"\xd0\xb0\", \"0123456789abcdef\"", kTag));
}

BOOST_AUTO_TEST_CASE(round_trip_of_every_coding) {
  for (Coding coding : {Coding::identity, Coding::gzip, Coding::br}) {
    std::string sent = etag_for_coding(kTag, coding);
    BOOST_TEST(if_none_match_matches(sent, kTag));
    BOOST_TEST(if_none_match_matches("W/" + sent, kTag));
    BOOST_TEST(!if_none_match_matches(sent, "\"fedcba9876543210\""));
  }
}

BOOST_AUTO_TEST_CASE(codings_named_by_if_none_match) {
  using wg::client_policy::if_none_match_codings;
  auto gz = etag_for_coding(kTag, Coding::gzip);
  auto br = etag_for_coding(kTag, Coding::br);
  auto set = if_none_match_codings(kTag + ", W/" + br, kTag);
  BOOST_TEST(set.identity);
  BOOST_TEST(!set.gzip);
  BOOST_TEST(set.br);
  auto star = if_none_match_codings("*", kTag);
  BOOST_TEST((star.identity && star.gzip && star.br));
  BOOST_TEST(!if_none_match_codings("\"other\", " + gz + "x", kTag).any());
  BOOST_TEST(!if_none_match_codings("w/" + gz, kTag).any());
}

BOOST_AUTO_TEST_CASE(a_304_names_a_coding_the_client_holds) {
  using wg::client_policy::coding_for_not_modified;
  using wg::client_policy::CodingSet;
  const CodingSet all{true, true, true};
  const CodingSet identity_gzip{true, true, false};
  const CodingSet only_identity{true, false, false};
  const CodingSet only_br{false, false, true};
  // The negotiated coding when listed (also for "*").
  BOOST_TEST((coding_for_not_modified(all, Coding::br, "gzip, br", true, true) == Coding::br));
  // A cache revalidating its identity and gzip copies for a client that prefers br: gzip, the
  // listed one this client accepts best.
  BOOST_TEST(
      (coding_for_not_modified(identity_gzip, Coding::br, "gzip, br", true, true) == Coding::gzip));
  BOOST_TEST(
      (coding_for_not_modified(only_identity, Coding::br, "br", true, true) == Coding::identity));
  // The client holds br but no longer asks for it: br is still what it holds.
  BOOST_TEST((coding_for_not_modified(only_br, Coding::gzip, "gzip", true, true) == Coding::br));
  // A listed coding that does not exist for this body is never named.
  BOOST_TEST(
      (coding_for_not_modified(only_br, Coding::identity, "", false, false) == Coding::identity));
}

BOOST_AUTO_TEST_SUITE_END()  // conditional_test
