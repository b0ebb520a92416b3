// Fuzz target: Accept-Encoding negotiation over the codings a cached entry holds. Input: the
// field value, tried with every combination of stored variants.
// Invariants: the coding sent exists and is identity or one the client named (or covered by
// "*"); "<coding>;q=0" added anywhere forbids that coding and changes nothing else; a winner
// stays the winner when a losing variant is not there; neither the order of the elements nor
// the case of the field matters. And from the same bytes, a list built here from known codings
// and weights, whose best acceptable coding is known without parsing, must choose it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "widget_gateway/client_policy/coding.hpp"

namespace {

using wg::client_policy::choose_coding;
using wg::client_policy::Coding;
using wg::client_policy::coding_token;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

bool available(Coding coding, bool have_gzip, bool have_br) {
  return coding == Coding::identity || (coding == Coding::gzip && have_gzip) ||
         (coding == Coding::br && have_br);
}

// The elements in reverse order (Accept-Encoding has no quoted strings, so ',' always ends one).
std::string reversed_elements(std::string_view field) {
  std::vector<std::string_view> elements;
  while (true) {
    const std::size_t comma = field.find(',');
    elements.push_back(field.substr(0, comma));
    if (comma == std::string_view::npos) break;
    field.remove_prefix(comma + 1);
  }
  std::string out;
  for (auto it = elements.rbegin(); it != elements.rend(); ++it) {
    if (!out.empty()) out.push_back(',');
    out.append(*it);
  }
  return out;
}

void check_field(std::string_view field, bool have_gzip, bool have_br) {
  const Coding chosen = choose_coding(field, have_gzip, have_br);
  WG_FUZZ_CHECK(available(chosen, have_gzip, have_br));
  if (chosen != Coding::identity) {
    const std::string named = lower(field);
    WG_FUZZ_CHECK(named.find(coding_token(chosen)) != std::string::npos ||
                  named.find('*') != std::string::npos);
    // A weight of 0 anywhere forbids it, and forbidding the winner is all that it changes for
    // an identity-only answer.
    const std::string forbidden =
        std::string(field) + ", " + std::string(coding_token(chosen)) + ";q=0";
    WG_FUZZ_CHECK(choose_coding(forbidden, have_gzip, have_br) != chosen);
  }
  for (const Coding other : {Coding::gzip, Coding::br}) {
    if (other == chosen) continue;
    const std::string forbidden =
        std::string(field) + "," + std::string(coding_token(other)) + ";q=0";
    WG_FUZZ_CHECK(choose_coding(forbidden, have_gzip, have_br) == chosen);
  }
  // A variant that lost does not matter to the winner.
  WG_FUZZ_CHECK(choose_coding(field, chosen == Coding::gzip, chosen == Coding::br) == chosen);
  WG_FUZZ_CHECK(choose_coding(reversed_elements(field), have_gzip, have_br) == chosen);
  WG_FUZZ_CHECK(choose_coding(upper(field), have_gzip, have_br) == chosen);
}

// ---- a field built from known parts --------------------------------------------------------

enum Slot { kIdentity, kGzip, kBr, kStar, kOther, kSlots };

struct Token {
  std::string_view text;
  Slot slot;
};
constexpr std::array<Token, 12> kTokens = {{{"gzip", kGzip},
                                            {"GZip", kGzip},
                                            {"x-gzip", kGzip},
                                            {"br", kBr},
                                            {"BR", kBr},
                                            {"identity", kIdentity},
                                            {"Identity", kIdentity},
                                            {"*", kStar},
                                            {"deflate", kOther},
                                            {"zstd", kOther},
                                            {"gzip2", kOther},
                                            {"b r", kOther}}};  // not a token: ignored

struct Weight {
  std::string_view text;  // what follows the token
  std::optional<int> q;   // thousandths; nullopt = a malformed element, ignored
};
constexpr std::array<Weight, 16> kWeights = {{{"", 1000},
                                              {";q=1", 1000},
                                              {";q=1.000", 1000},
                                              {" ; Q=0.8", 800},
                                              {";q=0.5", 500},
                                              {";q=0.50", 500},
                                              {";q=0.123", 123},
                                              {";q=0.001", 1},
                                              {";q=0", 0},
                                              {";q=0.000", 0},
                                              {";q=1.5", std::nullopt},
                                              {";q=0.1234", std::nullopt},
                                              {";q=-1", std::nullopt},
                                              {";q=", std::nullopt},
                                              {";level=1", std::nullopt},
                                              {";q=.5", std::nullopt}}};

// The spec of choose_coding (coding.hpp), applied to weights known per element: the lowest
// weight of each coding named more than once, "*" for those not named, the highest weight wins,
// ties prefer br, gzip, identity; unnamed identity ranks below every acceptable coding, and is
// the answer when nothing is acceptable.
Coding expected_choice(const std::array<std::optional<int>, kSlots>& named, bool have_gzip,
                       bool have_br) {
  auto weight = [&](Slot slot) { return named[slot] ? named[slot] : named[kStar]; };
  Coding best = Coding::identity;
  int best_q = 0;
  const std::array<std::pair<Coding, Slot>, 3> order = {
      {{Coding::br, kBr}, {Coding::gzip, kGzip}, {Coding::identity, kIdentity}}};
  for (const auto& [coding, slot] : order) {
    const auto q = weight(slot);
    if (available(coding, have_gzip, have_br) && q && *q > best_q) {
      best = coding;
      best_q = *q;
    }
  }
  return best;
}

void check_built(wg::fuzz::Bytes& bytes) {
  std::array<std::optional<int>, kSlots> named{};
  std::string field;
  const std::size_t count = bytes.pick(7);
  for (std::size_t i = 0; i < count; ++i) {
    const Token& token = kTokens[bytes.pick(kTokens.size())];
    const Weight& weight = kWeights[bytes.pick(kWeights.size())];
    if (i > 0) field += bytes.flag() ? ", " : ",";
    field.append(token.text).append(weight.text);
    if (weight.q && token.slot != kOther) {
      auto& q = named[token.slot];
      q = q ? std::min(*q, *weight.q) : *weight.q;
    }
  }
  for (int mask = 0; mask < 4; ++mask) {
    const bool have_gzip = (mask & 1) != 0;
    const bool have_br = (mask & 2) != 0;
    const Coding expected = expected_choice(named, have_gzip, have_br);
    if (choose_coding(field, have_gzip, have_br) != expected) {
      std::fprintf(stderr, "built field: \"%s\" gzip=%d br=%d\n", field.c_str(), have_gzip,
                   have_br);
      WG_FUZZ_CHECK(choose_coding(field, have_gzip, have_br) == expected);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view field = wg::fuzz::as_text(data, size);
  for (int mask = 0; mask < 4; ++mask) check_field(field, (mask & 1) != 0, (mask & 2) != 0);
  wg::fuzz::Bytes bytes(field);
  check_built(bytes);
  return 0;
}
