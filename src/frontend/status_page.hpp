#pragma once
// GET /admin/ui: the status page, one self-contained HTML document (inline CSS and JS, nothing
// from another host) written in status_page/ and compiled in. It holds no data: its script
// reads the admin JSON endpoints with the token the operator types, so the page itself is
// served without a token.
//
// Its Content-Security-Policy allows exactly the inline style and script by their SHA-256
// (no 'unsafe-inline'), requests to this origin only, and no framing.

#include <string>
#include <string_view>

#include "widget_gateway/http/response.hpp"

namespace wg::frontend {

namespace status_page_text {
extern const std::string_view kHtml;  // with {{style}} and {{script}} where the others go
extern const std::string_view kCss;
extern const std::string_view kJs;
}  // namespace status_page_text

// The page's answer, headers included (built once, copied per request).
http::Response status_page_response();

// The policy the page is sent with.
const std::string& status_page_csp();

}  // namespace wg::frontend
