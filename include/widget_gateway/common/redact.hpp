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
// A URL runs from its "scheme://" to the next blank, quote or angle bracket, and the last '@'
// in it ends the user info, so an unescaped '@' or '/' in a password is hidden too. A user
// name alone ("redis://app@host") is kept: it is not a secret.
std::string redact(std::string_view text);

}  // namespace wg
