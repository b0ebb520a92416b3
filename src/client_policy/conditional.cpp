#include "widget_gateway/client_policy/conditional.hpp"

#include <optional>
#include <vector>

#include "header_tokens.hpp"

namespace wg::client_policy {

namespace {

std::string_view suffix_of(Coding coding) {
  switch (coding) {
    case Coding::identity:
      return "";
    case Coding::gzip:
      return "-gz";
    case Coding::br:
      return "-br";
  }
  return "";
}

bool is_quoted(std::string_view tag) {
  return tag.size() >= 2 && tag.front() == '"' && tag.back() == '"';
}

// etagc = %x21 / %x23-7E / obs-text
bool is_etagc(char c) {
  auto u = static_cast<unsigned char>(c);
  return u == 0x21 || (u >= 0x23 && u != 0x7F);
}

// The opaque-tags of an If-None-Match list, without quotes and W/; nullopt if malformed.
std::optional<std::vector<std::string_view>> parse_tags(std::string_view field) {
  std::vector<std::string_view> tags;
  std::size_t i = 0;
  auto skip_ows = [&] {
    while (i < field.size() && detail::is_ows(field[i])) ++i;
  };
  bool expect_tag = true;  // a tag is needed before the next comma or the end
  while (true) {
    skip_ows();
    if (i == field.size()) break;
    if (field[i] == ',') {  // empty list elements are allowed (RFC 9110 §5.6.1)
      ++i;
      continue;
    }
    if (field.compare(i, 2, "W/") == 0) i += 2;  // weak: compared like strong here
    if (i == field.size() || field[i] != '"') return std::nullopt;
    std::size_t start = ++i;
    while (i < field.size() && is_etagc(field[i])) ++i;
    if (i == field.size() || field[i] != '"') return std::nullopt;
    tags.push_back(field.substr(start, i - start));
    ++i;
    expect_tag = false;
    skip_ows();
    if (i < field.size() && field[i] != ',') return std::nullopt;
  }
  if (expect_tag) return std::nullopt;  // empty or only commas
  return tags;
}

}  // namespace

std::string etag_for_coding(std::string_view strong_etag, Coding coding) {
  std::string out;
  append_etag_for_coding(out, strong_etag, coding);
  return out;
}

void append_etag_for_coding(std::string& out, std::string_view strong_etag, Coding coding) {
  if (!is_quoted(strong_etag)) {
    out.append(strong_etag);
    return;
  }
  out.append(strong_etag.substr(0, strong_etag.size() - 1));
  out.append(suffix_of(coding));
  out.push_back('"');
}

bool CodingSet::has(Coding coding) const {
  switch (coding) {
    case Coding::identity:
      return identity;
    case Coding::gzip:
      return gzip;
    case Coding::br:
      return br;
  }
  return false;
}

CodingSet if_none_match_codings(std::string_view if_none_match, std::string_view strong_etag) {
  CodingSet listed;
  std::string_view field = detail::trim_ows(if_none_match);
  if (field == "*") return {true, true, true};
  if (!is_quoted(strong_etag)) return listed;
  std::string_view ours = strong_etag.substr(1, strong_etag.size() - 2);
  auto tags = parse_tags(field);
  if (!tags) return listed;
  for (std::string_view tag : *tags) {
    if (tag.substr(0, ours.size()) != ours) continue;
    std::string_view rest = tag.substr(ours.size());
    if (rest == suffix_of(Coding::identity)) listed.identity = true;
    if (rest == suffix_of(Coding::gzip)) listed.gzip = true;
    if (rest == suffix_of(Coding::br)) listed.br = true;
  }
  return listed;
}

bool if_none_match_matches(std::string_view if_none_match, std::string_view strong_etag) {
  return if_none_match_codings(if_none_match, strong_etag).any();
}

Coding coding_for_not_modified(CodingSet listed, Coding negotiated,
                               std::string_view accept_encoding, bool have_gzip, bool have_br) {
  if (listed.has(negotiated)) return negotiated;
  const Coding best =
      choose_coding(accept_encoding, have_gzip && listed.gzip, have_br && listed.br);
  if (listed.has(best)) return best;
  if (have_br && listed.br) return Coding::br;
  if (have_gzip && listed.gzip) return Coding::gzip;
  if (listed.identity) return Coding::identity;
  return negotiated;
}

}  // namespace wg::client_policy
