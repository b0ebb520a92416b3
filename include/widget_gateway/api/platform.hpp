#pragma once
// The nine review platforms upstream knows (widget-reviews-api.md §2.3). Codes are
// case-sensitive, exactly as upstream spells them.

#include <cstdint>
#include <optional>
#include <string_view>

namespace wg::api {

enum class Platform : std::uint8_t {
  doubleGis,
  yaSprav,
  avito,
  zoon,
  vkontakte,
  prodoctorov,
  otzovik,
  googleMap,
  yaBusiness,
};

inline constexpr std::size_t kPlatformCount = 9;

// nullopt for anything but one of the nine codes (case-sensitive, no trimming).
std::optional<Platform> parse_platform(std::string_view code);
std::string_view to_string(Platform platform);

}  // namespace wg::api
