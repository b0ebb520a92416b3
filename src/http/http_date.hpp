#pragma once
// The Date field's value (RFC 9110 5.6.7, "Sun, 22 Nov 2026 01:35:44 GMT"), formatted once per
// second per thread: HTTP/1.1 and HTTP/2 answers carry the same text.

#include <chrono>
#include <ctime>
#include <string_view>

#include "widget_gateway/common/clock.hpp"

namespace wg::http {

// `when`: the injected Clock's wall time.
inline std::string_view date_value(WallTime when) {
  thread_local std::time_t cached_second = 0;
  thread_local char text[48];
  thread_local std::size_t length = 0;
  const std::time_t now = std::chrono::system_clock::to_time_t(when);
  if (now != cached_second) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    length = std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second = now;
  }
  return {text, length};
}

}  // namespace wg::http
