#pragma once
// /admin/entry: what an operator asks about (the widget data, or one reviews page) and the
// answer, as pure functions the admin handler calls around its lookups. Any thread.
//
// Every time in the answer is UTC, written as the access log writes its `time`
// ("2025-06-01T12:00:00.123Z"), so an entry can be read against log lines without converting.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>
#include <vector>

#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::frontend {

// The key asked about, from the raw query (after '?') of an /admin/entry target:
//   widget=ID                          the widget data;
//   widget=ID&limit=L[&skip=S][&type=T] a reviews page, checked as the public listener checks it;
//   widget=ID&limit=L&page=N[&type=T]  page N counted from 0, as upstream's pagination counts
//                                      (skip = N × L); with skip as well it is refused.
// A missing or repeated widget, or a page without limit, is bad_request.
std::variant<api::ApiRequest, api::Rejection> entry_request(std::string_view raw_query);

// What one key holds in this instance's L1 and in Redis.
struct KeyLook {
  std::string key;  // the logical key
  // Where Redis keeps it; none when the key is never stored there (a page cut from windows
  // lives in L1 only), and then Redis was not asked.
  std::optional<std::string> redis_key;
  std::shared_ptr<const cache::Entry> l1;
  std::shared_ptr<const cache::Entry> l2;
  std::error_code l2_error;  // Redis could not answer
};

// One window a derived page is cut from: reviews [skip, skip + limit) of the page's list.
struct WindowLook {
  std::uint64_t skip = 0;
  std::uint32_t limit = 0;
  KeyLook look;
};

// The JSON answer. `derived`: the page is cut from `windows` (cache.derive_pages on, and the
// page is not itself a window); it then lists them under "cut_from".
std::string entry_report(const KeyLook& asked, bool derived, const std::vector<WindowLook>& windows,
                         WallTime now);

}  // namespace wg::frontend
