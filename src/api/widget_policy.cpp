#include "widget_gateway/api/widget_policy.hpp"

#include <algorithm>

namespace wg::api {

bool matches_default_widget_pattern(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

WidgetPolicy::WidgetPolicy(std::string pattern, std::vector<std::string> allowlist)
    : pattern_(std::move(pattern)), allowlist_(std::move(allowlist)) {
  if (pattern_ != kDefaultWidgetPattern) {
    regex_.emplace(pattern_, std::regex::ECMAScript | std::regex::optimize);
  }
  std::sort(allowlist_.begin(), allowlist_.end());
  allowlist_.erase(std::unique(allowlist_.begin(), allowlist_.end()), allowlist_.end());
}

bool WidgetPolicy::allows(std::string_view decoded_id) const {
  // libstdc++'s regex matcher recurses per input character; the bound keeps a long id from
  // exhausting an io thread's stack, whatever the custom pattern.
  if (decoded_id.size() > kMaxWidgetIdBytes) return false;
  // std::regex_match on a const regex is a read-only operation: concurrent calls are safe.
  bool pattern_ok = regex_ ? std::regex_match(decoded_id.begin(), decoded_id.end(), *regex_)
                           : matches_default_widget_pattern(decoded_id);
  if (!pattern_ok) return false;
  if (allowlist_.empty()) return true;
  return std::binary_search(allowlist_.begin(), allowlist_.end(), decoded_id, std::less<>{});
}

}  // namespace wg::api
