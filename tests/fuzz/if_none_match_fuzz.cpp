// Fuzz target: If-None-Match against a cached body's ETags (one per content coding; the
// contract: any coding of the same body matches, compared weakly). Input: the field value.
// Invariants: a coding is matched only when its own tag appears, quoted, in the field ("*"
// alone matches all); a tag that is not ours added to a matching list changes nothing, and one
// of ours, weak or strong, adds its coding; the coding a 304 names is one the client listed
// and we hold, or the negotiated one. And from the same bytes, a list built here from known
// tags must match exactly the codings whose tags it holds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "widget_gateway/client_policy/conditional.hpp"

namespace {

using wg::client_policy::Coding;
using wg::client_policy::CodingSet;
using wg::client_policy::etag_for_coding;
using wg::client_policy::if_none_match_codings;
using wg::client_policy::if_none_match_matches;

constexpr std::array<Coding, 3> kCodings = {Coding::identity, Coding::gzip, Coding::br};
// The form strong_etag gives a stored body.
constexpr std::string_view kStoredEtag = "\"5f2b9c0e1a7d4c38\"";
constexpr std::array<std::string_view, 4> kAcceptEncodings = {"", "gzip", "br;q=0.5, gzip",
                                                              "identity;q=0, *"};

std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool held(Coding coding, bool have_gzip, bool have_br) {
  return coding == Coding::identity || (coding == Coding::gzip && have_gzip) ||
         (coding == Coding::br && have_br);
}

void check_not_modified_coding(CodingSet listed) {
  for (const std::string_view accept_encoding : kAcceptEncodings) {
    for (int mask = 0; mask < 4; ++mask) {
      const bool have_gzip = (mask & 1) != 0;
      const bool have_br = (mask & 2) != 0;
      bool any_held = false;
      for (const Coding c : kCodings)
        any_held = any_held || (listed.has(c) && held(c, have_gzip, have_br));
      for (const Coding negotiated : kCodings) {
        if (!held(negotiated, have_gzip, have_br)) continue;
        const Coding named = wg::client_policy::coding_for_not_modified(
            listed, negotiated, accept_encoding, have_gzip, have_br);
        WG_FUZZ_CHECK(named == negotiated ||
                      (listed.has(named) && held(named, have_gzip, have_br)));
        if (listed.has(negotiated)) WG_FUZZ_CHECK(named == negotiated);
        if (any_held) WG_FUZZ_CHECK(listed.has(named) && held(named, have_gzip, have_br));
      }
    }
  }
}

void check_field(std::string_view field, std::string_view stored) {
  const CodingSet listed = if_none_match_codings(field, stored);
  WG_FUZZ_CHECK(if_none_match_matches(field, stored) == listed.any());
  if (trim_ows(field) == "*") {
    WG_FUZZ_CHECK(listed.identity && listed.gzip && listed.br);
  } else {
    for (const Coding c : kCodings) {
      if (listed.has(c))
        WG_FUZZ_CHECK(field.find(etag_for_coding(stored, c)) != std::string_view::npos);
    }
  }
  if (listed.any() && trim_ows(field) != "*") {
    // Only well-formed lists match, so tags added to one are read as tags.
    const CodingSet with_other =
        if_none_match_codings(std::string(field) + ", \"not-ours\"", stored);
    WG_FUZZ_CHECK(with_other.identity == listed.identity && with_other.gzip == listed.gzip &&
                  with_other.br == listed.br);
    const CodingSet with_br = if_none_match_codings(
        "W/" + etag_for_coding(stored, Coding::br) + "," + std::string(field), stored);
    WG_FUZZ_CHECK(with_br.br && with_br.identity == listed.identity && with_br.gzip == listed.gzip);
  }
  check_not_modified_coding(listed);
}

// ---- a list built from known tags ---------------------------------------------------------

// Any byte as an etagc (%x21 / %x23-7E / obs-text).
char etagc(std::uint8_t b) {
  return b == 0x22 || b < 0x21 || b == 0x7F ? 'a' : static_cast<char>(b);
}

void check_built(wg::fuzz::Bytes& bytes) {
  std::string opaque;
  for (std::size_t n = bytes.pick(12); n > 0; --n) opaque.push_back(etagc(bytes.byte()));
  const std::string stored = "\"" + opaque + "\"";

  constexpr std::array<std::string_view, 5> kSpaces = {"", " ", "\t", "  ", " \t"};
  std::string field;
  CodingSet expected;
  const std::size_t count = 1 + bytes.pick(6);
  for (std::size_t i = 0; i < count; ++i) {
    std::string tag;  // the opaque-tag, quoted
    switch (bytes.pick(4)) {
      case 0:
      case 1:
        tag = etag_for_coding(stored, kCodings[bytes.pick(3)]);
        break;
      case 2: {  // one of ours, one character longer or shorter
        tag = etag_for_coding(stored, kCodings[bytes.pick(3)]);
        if (bytes.flag() && tag.size() > 2) {
          tag.erase(tag.size() - 2, 1);
        } else {
          tag.insert(tag.size() - 1, 1, etagc(bytes.byte()));
        }
        break;
      }
      default: {
        tag = "\"";
        for (std::size_t n = bytes.pick(8); n > 0; --n) tag.push_back(etagc(bytes.byte()));
        tag += "\"";
      }
    }
    for (const Coding c : kCodings) {
      if (tag == etag_for_coding(stored, c)) {
        if (c == Coding::identity) expected.identity = true;
        if (c == Coding::gzip) expected.gzip = true;
        if (c == Coding::br) expected.br = true;
      }
    }
    if (i > 0) {
      field += kSpaces[bytes.pick(kSpaces.size())];
      field += bytes.pick(4) == 0 ? ",," : ",";  // empty list elements are allowed
    }
    field += kSpaces[bytes.pick(kSpaces.size())];
    if (bytes.flag()) field += "W/";
    field += tag;
  }
  const CodingSet listed = if_none_match_codings(field, stored);
  if (listed.identity != expected.identity || listed.gzip != expected.gzip ||
      listed.br != expected.br) {
    std::fprintf(stderr, "built field: [%s] stored: [%s]\n", field.c_str(), stored.c_str());
    WG_FUZZ_CHECK(false);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view field = wg::fuzz::as_text(data, size);
  check_field(field, kStoredEtag);
  wg::fuzz::Bytes bytes(field);
  check_built(bytes);
  return 0;
}
