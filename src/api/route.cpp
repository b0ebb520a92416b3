#include "widget_gateway/api/route.hpp"

#include "widget_gateway/common/ascii.hpp"

namespace wg::api {
namespace {

constexpr std::string_view kWidgetPrefix = "/api/v1/widgets/widget/";

// Replaces an absolute-form target by its path-and-query part (possibly empty). False when
// the target is not an http(s) absolute URI with a non-empty authority.
bool strip_absolute_form(std::string_view& target) {
  auto sep = target.find("://");
  if (sep == std::string_view::npos) return false;
  std::string_view scheme = target.substr(0, sep);
  if (!ascii::iequals(scheme, "http") && !ascii::iequals(scheme, "https")) return false;
  std::string_view rest = target.substr(sep + 3);
  auto path_start = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path_start);
  if (authority.empty()) return false;
  // The authority is deliberately ignored: it never chooses a route or a destination.
  target = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  return true;
}

}  // namespace

RouteMatch match_route(std::string_view target) {
  RouteMatch match;
  if (target.find('#') != std::string_view::npos) return match;
  if (target.empty()) return match;
  if (target.front() != '/' && !strip_absolute_form(target)) return match;

  std::string_view path = target;
  std::string_view query;
  bool has_query = false;
  if (auto q = target.find('?'); q != std::string_view::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
    has_query = true;
  }
  // An absolute-form target without a path means "/", which is no route.
  if (path.empty()) return match;

  Route route = Route::not_found;
  std::string_view widget;
  if (path == "/healthz") {
    route = Route::healthz;
  } else if (path == "/readyz") {
    route = Route::readyz;
  } else if (path.starts_with(kWidgetPrefix)) {
    std::string_view rest = path.substr(kWidgetPrefix.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) return match;
    widget = rest.substr(0, slash);
    std::string_view tail = rest.substr(slash);
    if (widget.empty() || widget == "." || widget == "..") return match;
    if (tail == "/remote") {
      route = Route::widget;
    } else if (tail == "/reviews/remote") {
      route = Route::reviews;
    } else {
      return match;
    }
  } else {
    return match;
  }

  match.route = route;
  match.raw_widget = widget;
  match.raw_query = query;
  match.has_query = has_query;
  return match;
}

}  // namespace wg::api
