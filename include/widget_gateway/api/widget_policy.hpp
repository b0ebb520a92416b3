#pragma once
// Which widget ids the gateway accepts: access.widget_pattern (ECMAScript regex, full match
// on the percent-decoded id) and the optional allowlist (access.widgets). A refused id is
// answered as an unknown widget without calling upstream.

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace wg::api {

inline constexpr std::string_view kDefaultWidgetPattern = "^[A-Za-z0-9_-]{1,64}$";
// Longer decoded ids are refused whatever the pattern says.
inline constexpr std::size_t kMaxWidgetIdBytes = 256;

class WidgetPolicy {
 public:
  // Throws std::regex_error for an invalid pattern (a start-up failure), and for repetition
  // counts or back-references of more than three digits (which libstdc++ cannot read safely).
  // The default pattern is checked by hand: std::regex is slow and, on the hot path, every
  // request pays for it.
  WidgetPolicy(std::string pattern = std::string(kDefaultWidgetPattern),
               std::vector<std::string> allowlist = {});

  // Safe to call concurrently from any thread: no mutable state.
  bool allows(std::string_view decoded_id) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::optional<std::regex> regex_;     // empty when the default pattern's fast path is used
  std::vector<std::string> allowlist_;  // sorted, unique; empty = every id the pattern allows
};

// The hand-written equivalent of kDefaultWidgetPattern, exposed for tests.
bool matches_default_widget_pattern(std::string_view id);

}  // namespace wg::api
