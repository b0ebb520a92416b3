#pragma once
// The HTTP/1.x session's own reading of a request head (docs/listener.md, "The request-head
// scanner"): the request line and the header lines as views into the connection's buffer,
// nothing copied and nothing allocated once the session has read a head like it.
//
// It reads what Beast's parser reads, the way the current build reads it when the whole input
// is buffered: Beast's grammar (tokens, targets, obs-text and obs-fold in values), the head
// limit counted as Beast counts it (the request line within max_header_bytes of its start,
// the fields within max_header_bytes of theirs), and the framing rules Beast applies while it
// parses (Content-Length lists, Transfer-Encoding after Content-Length or after chunked,
// Connection as a token list). The session's own rules on top (refuse_head, other_version,
// 414 against 431) are shared with the Beast path. tests/fuzz/http1_scanner_fuzz.cpp holds
// it to the current build, on every input, however the input is split across reads.
//
// Unlike Beast's, its answer does not depend on how the bytes were split across reads, and
// it parses a head again only when the bytes may hold its end (an empty line), reach the
// limit or end the version, so a head sent a byte at a time is not parsed once per byte.
// Requests with a body are left to Beast's parser, which reads bodies (ScannedHead::body).

#include <ostream>  // before Boost 1.81's string_view, which uses std::ostream unincluded
// clang-format off
#include <boost/beast/http/verb.hpp>
// clang-format on
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "widget_gateway/http/request_headers.hpp"

namespace wg::http {

enum class ScanResult : std::uint8_t {
  complete,      // head() and headers() describe the request
  need_more,     // the bytes hold part of a head, or nothing yet
  header_limit,  // not within max_header_bytes: 431, or 414 when the request line is at fault
  bad_version,   // a version Beast does not parse: other_version decides (1.x as 1.1, 505, 400)
  malformed,     // 400
};

struct ScannedHead {
  boost::beast::http::verb method = boost::beast::http::verb::unknown;
  std::string_view method_text;
  std::string_view target;
  unsigned version = 11;  // 10 or 11
  bool keep_alive = true;
  std::optional<std::uint64_t> content_length;
  bool chunked = false;
  std::size_t bytes = 0;  // from the request line to the end of the empty line

  // A body follows the head (Beast's parser reads it).
  bool body() const { return chunked || content_length.value_or(0) > 0; }
};

class HeadScanner {
 public:
  explicit HeadScanner(std::size_t header_limit) : limit_(header_limit) {}

  // Forgets the last head: the next scan() starts a request.
  void reset();
  // `bytes`: what the connection holds from the request's first byte on (empty lines before
  // the request line included: up to four are skipped, as RFC 9112 2.2 allows). Called again
  // with more bytes after need_more.
  ScanResult scan(std::string_view bytes);
  // The client closed after `bytes`: nothing of a request (a clean end), or part of one.
  bool holds_nothing(std::string_view bytes) const;
  // The client closed after `bytes`, part of a request: what they give as they are (a
  // version refused, a line malformed), or malformed for a head cut short.
  ScanResult finish(std::string_view bytes);

  // After complete.
  const ScannedHead& head() const { return head_; }
  RequestHeaders headers() const { return RequestHeaders(lines_); }
  // The empty lines before the request line, in bytes (after any answer but need_more).
  std::size_t skipped() const { return skipped_; }
  // The target's size once the request line parsed, 0 before (request_line_too_long).
  std::size_t parsed_target_size() const { return target_size_; }

 private:
  ScanResult parse(std::string_view bytes);
  ScanResult parse_request_line(const char*& p, const char* start, const char* end);
  ScanResult parse_fields(const char*& p, const char* end);
  ScanResult parse_field(const char*& p, const char* fields, const char* last, HeaderLine& line);
  // The head did not fit in the window from `window_start`: header_limit once the bytes fill
  // max_header_bytes from there, need_more before.
  ScanResult ran_off(const char* window_start, const char* end);
  // Beast's do_field: the framing a line sets, or malformed.
  ScanResult apply(const HeaderLine& line);
  std::size_t empty_lines(std::string_view bytes) const;

  std::size_t limit_;
  ScannedHead head_;
  std::vector<HeaderLine> lines_;
  std::string folded_;  // values joined from obs-fold lines (rare)
  std::size_t target_size_ = 0;
  std::size_t skipped_ = 0;
  std::optional<std::string_view> connection_;  // the first Connection line's value
  const char* base_ = nullptr;                  // the bytes of the current parse
  // Need-more bookkeeping: no new parse until the bytes reach rescan_at_ or hold "\r\n\r\n"
  // past searched_.
  bool parsed_ = false;
  std::size_t searched_ = 0;
  std::size_t rescan_at_ = 0;
};

}  // namespace wg::http
