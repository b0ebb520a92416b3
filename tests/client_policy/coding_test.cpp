#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "widget_gateway/client_policy/coding.hpp"

using wg::client_policy::choose_coding;
using wg::client_policy::Coding;

namespace {

struct CodingCase {
  std::string accept_encoding;
  bool have_gzip;
  bool have_br;
  Coding expected;
};

constexpr Coding I = Coding::identity;
constexpr Coding G = Coding::gzip;
constexpr Coding B = Coding::br;

}  // namespace

BOOST_AUTO_TEST_SUITE(coding_test)

BOOST_AUTO_TEST_CASE(negotiation_table) {
  const std::vector<CodingCase> cases = {
      // Absent or empty header: identity.
      {"", true, true, I},
      {"   ", true, true, I},
      // Plain lists.
      {"gzip", true, true, G},
      {"br", true, true, B},
      {"gzip, deflate, br", true, true, B},
      {"gzip, deflate, br, zstd", true, true, B},
      {"gzip, deflate", true, true, G},
      {"deflate", true, true, I},
      {"br", true, false, I},
      {"gzip, br", true, false, G},
      {"gzip, br", false, true, B},
      {"gzip, br", false, false, I},
      // q-values.
      {"br;q=0.5, gzip;q=0.8", true, true, G},
      {"br;q=0.8, gzip;q=0.5", true, true, B},
      {"br;q=0.5, gzip;q=0.5", true, true, B},  // tie: br
      {"gzip;q=1.0, br;q=1", true, true, B},
      {"gzip;q=0.001", true, true, G},
      {"gzip;q=0", true, true, I},
      {"gzip;q=0.000", true, true, I},
      {"br;q=0, gzip", true, true, G},
      {"identity;q=1, gzip;q=0.5", true, true, I},
      {"identity;q=0.5, gzip;q=0.5", true, true, G},  // tie: gzip over identity
      {"identity, gzip", true, true, G},
      {"gzip;q=0.5", true, true, G},  // unlisted identity ranks last
      // Wildcard.
      {"*", true, true, B},
      {"*", true, false, G},
      {"*", false, false, I},
      {"gzip;q=0, *", true, true, B},
      {"gzip;q=0, *", true, false, I},
      {"br;q=0, *;q=0.3", true, true, G},
      {"*;q=0", true, true, I},
      {"*;q=0, identity", true, true, I},
      {"*;q=0.2, gzip;q=0.5", true, true, G},
      {"*;q=0.9, gzip;q=0.5", true, true, B},
      {"*;q=0.9, gzip;q=0.5", true, false, I},  // identity gets *'s 0.9
      // identity;q=0 with nothing else acceptable: still identity (never 406).
      {"identity;q=0", true, true, I},
      {"identity;q=0, gzip", true, true, G},
      {"identity;q=0, deflate", true, true, I},
      {"identity;q=0, *;q=0", true, true, I},
      // CodingCase-insensitivity and whitespace.
      {"GZIP", true, true, G},
      {"Br", true, true, B},
      {"gzip ; Q=0.5 , br ; q=0.4", true, true, G},
      {"\tgzip\t,\tbr;q=0.1", true, true, G},
      {",,gzip,, ,", true, true, G},
      {"x-gzip", true, true, G},
      {"X-GZIP;q=0.3, br;q=0.2", true, true, G},
      // A coding listed twice gets its lowest q-value.
      {"gzip, gzip;q=0", true, false, I},
      {"br;q=0.9, br;q=0.1, gzip;q=0.5", true, true, G},
      // Malformed elements are ignored, the rest still counts.
      {"gzip;q=2, br;q=0.5", true, true, B},
      {"gzip;q=1.001", true, true, I},
      {"gzip;q=0.1234", true, true, I},
      {"gzip;q=abc", true, true, I},
      {"gzip;q=", true, true, I},
      {"gzip;q=-1", true, true, I},
      {"gzip;q=.5", true, true, I},
      {"gzip;level=9", true, true, I},
      {"gzip;q=0.5;x=1", true, true, I},
      {"gzip q=0.5", true, true, I},
      {"g\"zip, br", true, true, B},
      {";q=1", true, true, I},
      {"\x80\xff", true, true, I},
      {"br;q=0, gzip;q=oops", true, true, I},
      {"gzip;q=1.", true, true, G},
      {"gzip;q=0.", true, true, I},
  };
  BOOST_TEST(cases.size() >= 30u);
  for (const auto& c : cases) {
    Coding got = choose_coding(c.accept_encoding, c.have_gzip, c.have_br);
    BOOST_TEST((got == c.expected), "Accept-Encoding \""
                                        << c.accept_encoding << "\" gzip=" << c.have_gzip
                                        << " br=" << c.have_br << ": got "
                                        << wg::client_policy::coding_token(got) << ", expected "
                                        << wg::client_policy::coding_token(c.expected));
  }
}

BOOST_AUTO_TEST_CASE(tokens) {
  BOOST_TEST(wg::client_policy::coding_token(Coding::identity) == "identity");
  BOOST_TEST(wg::client_policy::coding_token(Coding::gzip) == "gzip");
  BOOST_TEST(wg::client_policy::coding_token(Coding::br) == "br");
  BOOST_TEST((wg::client_policy::coding_from_token("gzip") == Coding::gzip));
  BOOST_TEST((wg::client_policy::coding_from_token("br") == Coding::br));
  BOOST_TEST((wg::client_policy::coding_from_token("identity") == Coding::identity));
  BOOST_TEST(!wg::client_policy::coding_from_token("deflate"));
  BOOST_TEST(!wg::client_policy::coding_from_token(""));
}

BOOST_AUTO_TEST_SUITE_END()  // coding_test
