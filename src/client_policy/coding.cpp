#include "widget_gateway/client_policy/coding.hpp"

#include <algorithm>
#include <array>

#include "header_tokens.hpp"

namespace wg::client_policy {

namespace {

using detail::iequals;
using detail::trim_ows;

// q-values in thousandths, so comparisons are exact.
constexpr int kQMax = 1000;

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
std::optional<int> parse_qvalue(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  if (text[0] != '0' && text[0] != '1') return std::nullopt;
  int value = (text[0] - '0') * kQMax;
  if (text.size() == 1) return value;
  if (text[1] != '.') return std::nullopt;
  int scale = 100;
  for (char c : text.substr(2)) {
    if (c < '0' || c > '9') return std::nullopt;
    value += (c - '0') * scale;
    scale /= 10;
  }
  if (value > kQMax) return std::nullopt;  // "1.5", "1.001"
  return value;
}

// What the field says about one coding: unset, or its (lowest) q-value.
struct Weight {
  std::optional<int> q;
  void add(int value) { q = q ? std::min(*q, value) : value; }
};

enum Slot { kIdentity, kGzip, kBr, kStar, kSlots };

std::optional<Slot> slot_of(std::string_view token) {
  if (iequals(token, "identity")) return kIdentity;
  if (iequals(token, "gzip") || iequals(token, "x-gzip")) return kGzip;
  if (iequals(token, "br")) return kBr;
  if (token == "*") return kStar;
  return std::nullopt;
}

}  // namespace

std::string_view coding_token(Coding coding) {
  switch (coding) {
    case Coding::identity:
      return "identity";
    case Coding::gzip:
      return "gzip";
    case Coding::br:
      return "br";
  }
  return "identity";
}

std::optional<Coding> coding_from_token(std::string_view token) {
  if (token == "identity") return Coding::identity;
  if (token == "gzip") return Coding::gzip;
  if (token == "br") return Coding::br;
  return std::nullopt;
}

Coding choose_coding(std::string_view accept_encoding, bool have_gzip, bool have_br) {
  std::array<Weight, kSlots> weights;
  detail::for_each_list_element(accept_encoding, [&](std::string_view element) {
    auto semi = element.find(';');
    std::string_view token = trim_ows(element.substr(0, semi));
    if (!detail::is_token(token)) return;
    int q = kQMax;
    if (semi != std::string_view::npos) {
      // Only one parameter, the weight, is defined for Accept-Encoding.
      std::string_view param = trim_ows(element.substr(semi + 1));
      if (param.size() < 2 || detail::ascii_lower(param[0]) != 'q' || param[1] != '=') return;
      auto value = parse_qvalue(param.substr(2));
      if (!value) return;
      q = *value;
    }
    if (auto slot = slot_of(token)) weights[*slot].add(q);
  });

  auto effective = [&](Slot slot) -> std::optional<int> {
    if (weights[slot].q) return weights[slot].q;
    return weights[kStar].q;
  };

  // Candidates in tie-break order; the first with the strictly highest q wins.
  Coding best = Coding::identity;
  int best_q = 0;
  auto consider = [&](Coding coding, Slot slot, bool available) {
    auto q = effective(slot);
    if (available && q && *q > best_q) {
      best = coding;
      best_q = *q;
    }
  };
  consider(Coding::br, kBr, have_br);
  consider(Coding::gzip, kGzip, have_gzip);
  consider(Coding::identity, kIdentity, true);
  // Identity unlisted (and not covered by "*") ranks last; with nothing acceptable it is still
  // the answer, never 406.
  return best;
}

}  // namespace wg::client_policy
