#pragma once
// Passwords in URLs are never printed: --check-config and error messages show them as "***".

#include <string>
#include <string_view>

namespace wg::config {

// "redis://app:secret@host:6379/0" -> "redis://app:***@host:6379/0". Text with no password
// after "scheme://" is returned as it is. The last '@' ends the user info, so an unescaped
// '@' or '/' in a password is hidden too.
inline std::string redact_url_password(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const auto start = scheme_end + 3;
  const auto at = url.rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(url);
  const auto colon = url.find(':', start);
  if (colon == std::string_view::npos || colon + 1 >= at) return std::string(url);
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

}  // namespace wg::config
