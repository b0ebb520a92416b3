#include "widget_gateway/api/widget_policy.hpp"

#include <algorithm>

#include "id_chars.hpp"

namespace wg::api {

bool matches_default_widget_pattern(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!is_id_char(c)) return false;
  }
  return true;
}

namespace {

// Throws when a repetition count ("{n,m}") or a back-reference ("\\n") of `pattern` has more
// than three digits. libstdc++ (GCC 12) reads those numbers into a long without checking, so a
// long one overflows (undefined behaviour) before the pattern is refused; and no id is longer
// than kMaxWidgetIdBytes, so a count of 1000 already means nothing a smaller one does not.
// Looked for without parsing the pattern (escapes, classes): a brace or a backslash that is a
// character followed by four digits is refused too, which costs no widget id anything.
void refuse_long_numbers(std::string_view pattern) {
  auto digits_at = [&](std::size_t i) {
    std::size_t n = 0;
    while (i + n < pattern.size() && pattern[i + n] >= '0' && pattern[i + n] <= '9') ++n;
    return n;
  };
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && digits_at(i + 1) > 3) {
      throw std::regex_error(std::regex_constants::error_backref);
    }
    if (pattern[i] != '{') continue;
    for (std::size_t j = i + 1; j < pattern.size() && pattern[j] != '}'; ++j) {
      if (digits_at(j) > 3) throw std::regex_error(std::regex_constants::error_badbrace);
    }
  }
}

}  // namespace

WidgetPolicy::WidgetPolicy(std::string pattern, std::vector<std::string> allowlist)
    : pattern_(std::move(pattern)), allowlist_(std::move(allowlist)) {
  if (pattern_ != kDefaultWidgetPattern) {
    refuse_long_numbers(pattern_);
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
