#include "widget_gateway/redis/error_kind.hpp"

#include <array>
#include <utility>

namespace wg::redis {

ErrorKind classify_error_reply(std::string_view message) {
  static constexpr std::array<std::pair<std::string_view, ErrorKind>, 14> kPrefixes{{
      {"NOAUTH", ErrorKind::auth},
      {"WRONGPASS", ErrorKind::auth},
      {"NOPERM", ErrorKind::auth},
      {"READONLY", ErrorKind::readonly},
      {"OOM", ErrorKind::oom},
      {"LOADING", ErrorKind::unavailable},
      {"BUSY", ErrorKind::unavailable},
      {"MISCONF", ErrorKind::unavailable},
      {"MASTERDOWN", ErrorKind::unavailable},
      {"CLUSTERDOWN", ErrorKind::unavailable},
      {"TRYAGAIN", ErrorKind::unavailable},
      {"MOVED", ErrorKind::moved},
      {"ASK", ErrorKind::moved},
      {"CROSSSLOT", ErrorKind::crossslot},
  }};
  std::string_view word = message.substr(0, message.find(' '));
  for (const auto& [prefix, kind] : kPrefixes) {
    if (word == prefix) return kind;
  }
  return ErrorKind::other;
}

bool is_server_condition(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::auth:
    case ErrorKind::readonly:
    case ErrorKind::oom:
    case ErrorKind::unavailable:
    case ErrorKind::moved:
    case ErrorKind::crossslot:
      return true;
    default:
      return false;
  }
}

}  // namespace wg::redis
