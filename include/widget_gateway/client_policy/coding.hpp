#pragma once
// Content negotiation of Accept-Encoding (RFC 9110 §12.5.3) over the codings a cached entry
// holds. Pure.

#include <optional>
#include <string_view>

namespace wg::client_policy {

enum class Coding { identity, gzip, br };

// The content-coding token: "identity", "gzip", "br" (what Content-Encoding carries, except that
// identity is never sent).
std::string_view coding_token(Coding coding);

// The inverse for stored variant names ("gzip", "br", "identity"); nullopt for anything else.
std::optional<Coding> coding_from_token(std::string_view token);

// Picks the coding to send, given the request's Accept-Encoding field value (all field lines
// joined with ","; empty when absent) and which encoded variants exist.
//   - No header, or an empty one: identity. (RFC 9110 would allow any coding for an absent
//     header, but clients that send none are scripts and old tools that may not decode.)
//   - Each listed coding gets its q-value (default 1); "q=0" forbids it; "*" gives its q-value
//     to every coding not listed by name, identity included; "x-gzip" is gzip (§8.4.1.3).
//     A coding listed more than once gets its lowest q-value (a "q=0" anywhere forbids it).
//   - The highest q-value wins; ties prefer br, then gzip, then identity. Identity that is not
//     listed (and not covered by "*") is acceptable but ranks below any acceptable coding.
//   - Tokens and the "q" name are case-insensitive; OWS is allowed around "," and ";".
//     Malformed elements (bad token, bad q-value, unknown parameters) are ignored.
//   - When nothing is acceptable ("identity;q=0" with no usable coding), identity is sent
//     anyway: RFC 9110 permits ignoring the field instead of answering 406, and a body the
//     client may not like is more useful to it than an error it surely cannot use.
Coding choose_coding(std::string_view accept_encoding, bool have_gzip, bool have_br);

}  // namespace wg::client_policy
