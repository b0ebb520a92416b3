#include "head_checks.hpp"

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include "header_limits.hpp"

namespace wg::http {
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// The first line of the HTTP/2 client preface (RFC 9113 3.4).
constexpr std::string_view kH2PrefacePrefix = "PRI * HTTP/2.0\r\n";

// True when every Transfer-Encoding line together names exactly one coding, "chunked".
bool only_chunked(const RequestHeaders& headers) {
  std::size_t codings = 0;
  bool chunked = false;
  headers.for_each("Transfer-Encoding", [&](std::string_view value) {
    for (auto coding : bhttp::token_list(value)) {
      ++codings;
      chunked = beast::iequals(coding, "chunked");
    }
  });
  return codings == 1 && chunked;
}

}  // namespace

bool starts_h2_preface(std::string_view bytes) {
  const std::size_t n = std::min(bytes.size(), kH2PrefacePrefix.size());
  return n >= 3 && bytes.substr(0, n) == kH2PrefacePrefix.substr(0, n);
}

// Once Beast has parsed the request line the parser holds its target (and the line is gone
// from the buffer); before that, the buffer still starts with the line.
bool request_line_too_long(std::size_t parsed_target, std::string_view bytes,
                           std::size_t max_target) {
  if (parsed_target > 0) return parsed_target > max_target;
  auto end = bytes.find("\r\n");
  return end == std::string_view::npos || end > max_target + 32;  // 32: method and version
}

void skip_empty_lines(beast::flat_buffer& buffer) {
  for (int i = 0; i < 4 && buffered(buffer).starts_with("\r\n"); ++i) buffer.consume(2);
}

char* other_version(beast::flat_buffer& buffer) {
  std::string_view bytes = buffered(buffer);
  auto end = bytes.find("\r\n");
  if (end == std::string_view::npos || end < 9) return nullptr;
  std::string_view line = bytes.substr(0, end);
  std::string_view version = line.substr(end - 9);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (std::count(line.begin(), line.end(), ' ') != 2 || !version.starts_with(" HTTP/") ||
      !digit(version[6]) || version[7] != '.' || !digit(version[8]) || version == " HTTP/1.0" ||
      version == " HTTP/1.1") {
    return nullptr;
  }
  return static_cast<char*>(buffer.data().data()) + end - 3;
}

ScannedHead scanned_from(const HeadParser& parser) {
  const HeadRequest& req = parser.get();
  ScannedHead head;
  head.method = req.method();
  head.method_text = std::string_view(req.method_string());
  head.target = std::string_view(req.target());
  head.version = req.version() > 11 ? 11u : req.version();
  head.keep_alive = req.keep_alive();
  if (auto length = parser.content_length()) head.content_length = *length;
  head.chunked = parser.chunked();
  return head;
}

void header_lines(const RequestFields& fields, std::vector<HeaderLine>& lines) {
  lines.clear();
  lines.reserve(static_cast<std::size_t>(std::distance(fields.begin(), fields.end())));
  for (const auto& field : fields) {
    lines.push_back({std::string_view(field.name_string()), std::string_view(field.value())});
  }
}

std::optional<Refusal> refuse_head(const ScannedHead& head, const RequestHeaders& headers,
                                   std::size_t max_target) {
  std::size_t hosts = 0;
  bool transfer_encoding = false, content_length = false;
  for (const HeaderLine& line : headers) {
    hosts += ascii::iequals(line.name, "Host");
    transfer_encoding |= ascii::iequals(line.name, "Transfer-Encoding");
    content_length |= ascii::iequals(line.name, "Content-Length");
  }
  if (head.target.size() > max_target) return Refusal::target_too_long;
  if (headers.size() > kMaxHeaderFields) return Refusal::head_too_large;
  // Beast rejects chunked + Content-Length, but not another coding + Content-Length: both
  // are a request-smuggling vector (RFC 9112 6.3), and so are several Host lines. HTTP/1.1
  // requires exactly one Host (RFC 9112 3.2); 1.0 may omit it.
  if (transfer_encoding && content_length) return Refusal::framing_conflict;
  if (hosts > 1) return Refusal::duplicate_host;
  if (hosts == 0 && head.version >= 11) return Refusal::missing_host;
  if (transfer_encoding && !only_chunked(headers)) return Refusal::transfer_coding;
  return std::nullopt;
}

}  // namespace wg::http
