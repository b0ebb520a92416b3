#include "status_page.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace wg::frontend {

namespace {

// 'sha256-<base64>' for a CSP source list.
std::string csp_hash(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char base64[4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1];
  const int length = EVP_EncodeBlock(base64, digest, SHA256_DIGEST_LENGTH);
  return "'sha256-" + std::string(reinterpret_cast<const char*>(base64), length) + "'";
}

void replace_once(std::string& text, std::string_view marker, std::string_view with) {
  const auto at = text.find(marker);
  if (at != std::string::npos) text.replace(at, marker.size(), with);
}

std::string page_html() {
  std::string html(status_page_text::kHtml);
  replace_once(html, "{{style}}", "<style>" + std::string(status_page_text::kCss) + "</style>");
  replace_once(html, "{{script}}", "<script>" + std::string(status_page_text::kJs) + "</script>");
  return html;
}

}  // namespace

const std::string& status_page_csp() {
  static const std::string policy =
      "default-src 'none'; script-src " + csp_hash(status_page_text::kJs) + "; style-src " +
      csp_hash(status_page_text::kCss) +
      "; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
      "frame-ancestors 'none'";
  return policy;
}

http::Response status_page_response() {
  // One copy for the process; each answer keeps it alive rather than copying it.
  static const auto html = std::make_shared<const std::string>(page_html());
  http::Response response;
  response.status = 200;
  response.add_header("Content-Type", "text/html; charset=utf-8");
  response.add_header("Content-Security-Policy", status_page_csp());
  response.add_header("X-Content-Type-Options", "nosniff");
  response.add_header("X-Frame-Options", "DENY");
  response.add_header("Referrer-Policy", "no-referrer");
  response.add_header("Cache-Control", "no-store");
  response.body = *html;
  response.body_owner = html;
  return response;
}

}  // namespace wg::frontend
