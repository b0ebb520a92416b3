#pragma once
// Conditional GET (RFC 9110 §13.1.2) over representations that differ only by content coding.
//
// A cached entry has one strong ETag for its body (`"0123abcd"`). Each coded representation gets
// its own ETag, as RFC 9110 §8.8.3 requires of strong validators: the stored one for identity,
// the same with a suffix inside the quotes otherwise (`"0123abcd-gz"`, `"0123abcd-br"`).
// If-None-Match accepts any of them (the contract), because every coding of the body is the same
// data: a client that cached the gzip answer may revalidate after switching to br. Pure.

#include <string>
#include <string_view>

#include "widget_gateway/client_policy/coding.hpp"

namespace wg::client_policy {

// The ETag of `strong_etag`'s body sent with `coding`. A value that is not a quoted tag is
// returned unchanged (a stored ETag is always quoted; this only keeps a bug from growing).
std::string etag_for_coding(std::string_view strong_etag, Coding coding);
// The same, appended to `out`.
void append_etag_for_coding(std::string& out, std::string_view strong_etag, Coding coding);

// Whether an If-None-Match field value (all field lines joined with ",") matches the body whose
// stored ETag is `strong_etag`, so that 304 may be answered:
//   - "*" alone matches (the resource has a current representation whenever this is asked);
//   - otherwise a comma-separated list of entity-tags, compared weakly (W/"x" matches "x"),
//     each matching any coding variant of `strong_etag`;
//   - anything malformed (unquoted tags, "*" inside a list, junk between tags, a lower-case
//     "w/") makes the whole field not match: a full 200 is always a correct answer.
bool if_none_match_matches(std::string_view if_none_match, std::string_view strong_etag);

// Which codings of that body an If-None-Match field value names, by the same rules ("*" names
// every coding); none when it does not match.
struct CodingSet {
  bool identity = false;
  bool gzip = false;
  bool br = false;
  bool any() const { return identity || gzip || br; }
  bool has(Coding coding) const;
};
CodingSet if_none_match_codings(std::string_view if_none_match, std::string_view strong_etag);

// The coding a 304 names (its ETag and Content-Encoding), given the codings If-None-Match listed,
// the one negotiated for a 200 and which encoded variants exist. A cache that stored several
// codings of the body revalidates them with one request listing all their tags, and uses the
// 304's ETag to select the stored response to refresh (RFC 9111 §4.3.4): a 304 naming a tag it
// did not send selects nothing, and it must then fetch the whole body again. So: the negotiated
// coding when it was listed; otherwise the listed coding the client accepts best; otherwise any
// listed coding that exists (the client holds it, nothing else matters for a bodiless answer);
// the negotiated one when nothing listed exists.
Coding coding_for_not_modified(CodingSet listed, Coding negotiated,
                               std::string_view accept_encoding, bool have_gzip, bool have_br);

}  // namespace wg::client_policy
