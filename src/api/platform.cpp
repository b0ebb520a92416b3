#include "widget_gateway/api/platform.hpp"

#include <array>

namespace wg::api {
namespace {

// Indexed by the enum's value.
constexpr std::array<std::string_view, kPlatformCount> kCodes = {
    "doubleGis",   "yaSprav", "avito",     "zoon",       "vkontakte",
    "prodoctorov", "otzovik", "googleMap", "yaBusiness",
};

}  // namespace

std::optional<Platform> parse_platform(std::string_view code) {
  for (std::size_t i = 0; i < kCodes.size(); ++i) {
    if (kCodes[i] == code) return static_cast<Platform>(i);
  }
  return std::nullopt;
}

std::string_view to_string(Platform platform) {
  auto index = static_cast<std::size_t>(platform);
  return index < kCodes.size() ? kCodes[index] : std::string_view("unknown");
}

}  // namespace wg::api
