#pragma once
// The one rule for secrets in anything printed: events at every level, error messages,
// --check-config. A URL's password (redis://app:PASSWORD@host, http://user:PASSWORD@host) is
// shown as "***"; tokens and passwords given on their own are never printed at all.

#include <string>
#include <string_view>

namespace wg {

inline constexpr std::string_view kRedacted = "***";

// `text` with the password of every URL in it replaced by "***":
// "redis://app:secret@host:6379/0" -> "redis://app:***@host:6379/0", also inside a sentence.
// A URL runs from its "scheme://" to the next blank, double quote or angle bracket (none of
// which a URL holds; an apostrophe it may), and the last '@' in it ends the user info, so an
// unescaped '@' or '/' in a password is hidden too. A user name alone ("redis://app@host") is
// kept: it is not a secret.
std::string redact(std::string_view text);

// The same for a value known to be one URL, however malformed (a config value being refused):
// its password runs to the last '@' even across blanks and quotes, which in free text would
// have ended the URL before it.
std::string redact_url(std::string_view url);

}  // namespace wg
