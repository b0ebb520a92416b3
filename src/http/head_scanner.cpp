#include "head_scanner.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/http/rfc7230.hpp>
#include <charconv>
#include <cstring>
#include <limits>

namespace wg::http {
namespace bhttp = boost::beast::http;

namespace {

// Beast's bound on a value joined from obs-fold lines; past it, header_limit.
constexpr std::size_t kMaxFoldedValue = 4096;
constexpr std::size_t kMaxEmptyLineBytes = 8;  // four "\r\n" (skip_empty_lines)

unsigned char byte(char c) {
  return static_cast<unsigned char>(c);
}

// One table for the scanner's character classes: a lookup per byte, not a search.
enum CharClass : std::uint8_t {
  kToken = 1,       // tchar (RFC 9110 5.6.2): methods and field names
  kTargetChar = 2,  // what Beast takes in a target: any byte but controls, space and DEL
  kEndsValue = 4,   // ends a field value's run: a control other than HTAB, or DEL
};

constexpr std::array<std::uint8_t, 256> kClasses = [] {
  std::array<std::uint8_t, 256> table{};
  constexpr std::string_view separators = "\"(),/:;<=>?@[\\]{}";
  for (int b = 0; b < 256; ++b) {
    std::uint8_t c = 0;
    if (b > 0x20 && b < 0x7f && separators.find(static_cast<char>(b)) == std::string_view::npos) {
      c |= kToken;
    }
    if (b > 0x20 && b != 0x7f) c |= kTargetChar;
    if ((b < 0x20 && b != '\t') || b == 0x7f) c |= kEndsValue;
    table[static_cast<std::size_t>(b)] = c;
  }
  return table;
}();

bool is_token(char c) {
  return (kClasses[byte(c)] & kToken) != 0;
}
bool is_target_char(char c) {
  return (kClasses[byte(c)] & kTargetChar) != 0;
}
bool ends_value(char c) {
  return (kClasses[byte(c)] & kEndsValue) != 0;
}
bool is_digit(char c) {
  return byte(c - '0') < 10;
}
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// Eight bytes at a time (SWAR) where a run is long: targets and field values. Whether any
// byte of `x` is below `n` (n <= 0x80; bytes of 0x80 and above never match), or equals `b`.
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
std::uint64_t load8(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
bool any_below(std::uint64_t x, std::uint8_t n) {
  return ((x - kOnes * n) & ~x & kHighs) != 0;
}
bool any_equal(std::uint64_t x, std::uint8_t b) {
  const std::uint64_t v = x ^ (kOnes * b);
  return ((v - kOnes) & ~v & kHighs) != 0;
}

// The first byte from `p` on (before `last`) that cannot be in a target.
const char* skip_target(const char* p, const char* last) {
  while (last - p >= 8) {
    const std::uint64_t x = load8(p);
    if (any_below(x, 0x21) || any_equal(x, 0x7f)) break;
    p += 8;
  }
  while (p < last && is_target_char(*p)) ++p;
  return p;
}

// The first byte from `p` on (before `last`) that ends a field value's run.
const char* skip_value(const char* p, const char* last) {
  for (;;) {
    while (last - p >= 8) {
      const std::uint64_t x = load8(p);
      if (any_below(x, 0x20) || any_equal(x, 0x7f)) break;
      p += 8;
    }
    // A HTAB stops the eight-byte steps without ending the run.
    if (p >= last || ends_value(*p)) return p;
    ++p;
  }
}

enum class Eol { found, need_more, bad };

// From `p`, past the line's CRLF; `content_end`: where its content ends. A control other than
// CR, or CR without LF, is bad (Beast: bad_value, bad_line_ending).
Eol to_end_of_line(const char*& p, const char* last, const char*& content_end) {
  p = skip_value(p, last);
  if (p >= last) return Eol::need_more;
  if (*p != '\r') return Eol::bad;
  if (++p >= last) return Eol::need_more;
  if (*p++ != '\n') return Eol::bad;
  content_end = p - 2;
  return Eol::found;
}

const char* trim_back(const char* it, const char* first) {
  while (it != first && is_blank(it[-1])) --it;
  return it;
}

// One line of a field value from `p`: blanks skipped, read to its CRLF, its content
// [first, content_end) trimmed at the back. `p` ends past the CRLF on a byte that is there:
// whether it is a blank tells whether the value goes on (obs-fold).
ScanResult value_line(const char*& p, const char* last, const char*& first,
                      const char*& content_end) {
  for (;; ++p) {
    if (p >= last) return ScanResult::need_more;
    if (!is_blank(*p)) break;
  }
  first = p;
  const Eol eol = to_end_of_line(p, last, content_end);
  if (eol != Eol::found) return eol == Eol::bad ? ScanResult::malformed : ScanResult::need_more;
  if (p >= last) return ScanResult::need_more;
  content_end = trim_back(content_end, first);
  return ScanResult::complete;
}

}  // namespace

void HeadScanner::reset() {
  parsed_ = false;
  searched_ = 0;
  rescan_at_ = 0;
}

std::size_t HeadScanner::empty_lines(std::string_view bytes) const {
  std::size_t n = 0;
  while (n < kMaxEmptyLineBytes && bytes.substr(n).starts_with("\r\n")) n += 2;
  return n;
}

bool HeadScanner::holds_nothing(std::string_view bytes) const {
  return empty_lines(bytes) == bytes.size();
}

ScanResult HeadScanner::finish(std::string_view bytes) {
  // The last scan may have waited for the head's end without parsing what came meanwhile.
  const ScanResult result = parse(bytes);
  return result == ScanResult::need_more ? ScanResult::malformed : result;
}

ScanResult HeadScanner::scan(std::string_view bytes) {
  // As Beast after its first look: no new parse until the bytes may hold the head's end, or
  // reach the point where the last parse ran out (the limit, the version's CRLF).
  if (parsed_ && bytes.size() < rescan_at_) {
    const std::size_t from = searched_ >= 3 ? searched_ - 3 : 0;
    if (bytes.find("\r\n\r\n", from) == std::string_view::npos) {
      searched_ = bytes.size();
      return ScanResult::need_more;
    }
  }
  parsed_ = true;
  searched_ = bytes.size();
  return parse(bytes);
}

ScanResult HeadScanner::ran_off(const char* window_start, const char* end) {
  if (static_cast<std::size_t>(end - window_start) >= limit_) return ScanResult::header_limit;
  rescan_at_ = static_cast<std::size_t>(window_start - base_) + limit_;
  return ScanResult::need_more;
}

ScanResult HeadScanner::parse(std::string_view bytes) {
  lines_.clear();
  folded_.clear();
  head_ = ScannedHead{};
  target_size_ = 0;
  connection_.reset();
  base_ = bytes.data();
  rescan_at_ = bytes.size() + 1;
  skipped_ = empty_lines(bytes);
  const char* const start = bytes.data() + skipped_;
  const char* const end = bytes.data() + bytes.size();
  // A lone CR may begin one more empty line to skip.
  if (start == end || (skipped_ < kMaxEmptyLineBytes && end - start == 1 && *start == '\r')) {
    return ScanResult::need_more;
  }
  const char* p = start;
  ScanResult result = parse_request_line(p, start, end);
  if (result != ScanResult::complete) return result;
  result = parse_fields(p, end);
  if (result != ScanResult::complete) return result;

  head_.bytes = static_cast<std::size_t>(p - start);
  // As Beast's message::keep_alive(): the first Connection line decides.
  if (head_.version < 11) {
    head_.keep_alive =
        connection_.has_value() && bhttp::token_list{*connection_}.exists("keep-alive");
  } else {
    head_.keep_alive = !connection_.has_value() || !bhttp::token_list{*connection_}.exists("close");
  }
  return ScanResult::complete;
}

ScanResult HeadScanner::parse_request_line(const char*& p, const char* start, const char* end) {
  const char* const last = start + std::min<std::size_t>(limit_, end - start);
  const char* const method = p;
  while (p < last && is_token(*p)) ++p;
  if (p >= last) return ran_off(start, end);
  if (*p != ' ' || p == method) return ScanResult::malformed;
  head_.method_text = std::string_view(method, p - method);
  const char* const target = ++p;
  p = skip_target(p, last);
  if (p >= last) return ran_off(start, end);
  if (*p != ' ' || p == target) return ScanResult::malformed;
  head_.target = std::string_view(target, p - target);
  ++p;
  if (last - p < 8) return ran_off(start, end);
  if (std::string_view(p, 5) != "HTTP/" || !is_digit(p[5]) || p[6] != '.' || !is_digit(p[7])) {
    return ScanResult::bad_version;
  }
  const int version = 10 * (p[5] - '0') + (p[7] - '0');
  p += 8;
  if (version < 10 || version > 11) {
    // Whether it is read as 1.1, answered 505 or 400 depends on the CRLF after it
    // (other_version): wait for those two bytes, wherever the limit is.
    if (end - p >= 2) return ScanResult::bad_version;
    rescan_at_ = static_cast<std::size_t>(p + 2 - base_);
    return ScanResult::need_more;
  }
  if (last - p < 2) return ran_off(start, end);
  if (p[0] != '\r' || p[1] != '\n') return ScanResult::bad_version;
  p += 2;
  head_.version = static_cast<unsigned>(version);
  head_.method = bhttp::string_to_verb(head_.method_text);
  target_size_ = head_.target.size();
  return ScanResult::complete;
}

ScanResult HeadScanner::parse_fields(const char*& p, const char* end) {
  // Beast counts the fields' limit from their first byte, not the request line's.
  const char* const fields = p;
  const char* const last = fields + std::min<std::size_t>(limit_, end - fields);
  for (;;) {
    if (last - p < 2) return ran_off(fields, end);
    if (p[0] == '\r') {
      if (p[1] != '\n') return ScanResult::malformed;
      p += 2;
      return ScanResult::complete;
    }
    HeaderLine line;
    ScanResult result = parse_field(p, fields, last, line);
    if (result == ScanResult::need_more) return ran_off(fields, end);
    if (result != ScanResult::complete) return result;
    result = apply(line);
    if (result != ScanResult::complete) return result;
    lines_.push_back(line);
  }
}

ScanResult HeadScanner::parse_field(const char*& p, const char* fields, const char* last,
                                    HeaderLine& line) {
  const char* first = p;
  for (;;) {
    if (*p == ':') break;
    if (!is_token(*p)) return ScanResult::malformed;
    if (++p >= last) return ScanResult::need_more;
  }
  if (p == first) return ScanResult::malformed;
  line.name = std::string_view(first, p - first);
  ++p;
  const char* content_end = nullptr;
  for (;;) {
    const ScanResult result = value_line(p, last, first, content_end);
    if (result != ScanResult::complete) return result;
    if (!is_blank(*p)) {
      line.value = std::string_view(first, content_end - first);
      return ScanResult::complete;
    }
    ++p;
    if (content_end != first) break;
  }

  // obs-fold (RFC 9112 5.2): the lines' contents joined with one space, as Beast does, in
  // storage that holds every folded value of the head without moving.
  if (folded_.capacity() < static_cast<std::size_t>(last - fields)) {
    folded_.reserve(static_cast<std::size_t>(last - fields));
  }
  const std::size_t at = folded_.size();
  if (static_cast<std::size_t>(content_end - first) > kMaxFoldedValue) {
    return ScanResult::header_limit;
  }
  folded_.append(first, content_end);
  for (;;) {
    const ScanResult result = value_line(p, last, first, content_end);
    if (result != ScanResult::complete) return result;
    if (first != content_end) {
      const std::size_t size = folded_.size() - at;
      if (size >= kMaxFoldedValue ||
          static_cast<std::size_t>(content_end - first) > kMaxFoldedValue - size - 1) {
        return ScanResult::header_limit;
      }
      folded_.push_back(' ');
      folded_.append(first, content_end);
    }
    if (!is_blank(*p)) {
      line.value = std::string_view(folded_.data() + at, folded_.size() - at);
      return ScanResult::complete;
    }
    ++p;
  }
}

ScanResult HeadScanner::apply(const HeaderLine& line) {
  const std::string_view name = line.name;
  const std::string_view value = line.value;
  if (ascii::iequals(name, "Connection") || ascii::iequals(name, "Proxy-Connection")) {
    if (!bhttp::validate_list(bhttp::opt_token_list{value})) return ScanResult::malformed;
    if (!connection_.has_value() && ascii::iequals(name, "Connection")) connection_ = value;
    return ScanResult::complete;
  }
  if (ascii::iequals(name, "Content-Length")) {
    // One number, or a list of the same number (RFC 9110 8.6).
    if (head_.chunked) return ScanResult::malformed;
    auto unread = 1 + std::count(value.begin(), value.end(), ',');
    const bhttp::opt_token_list tokens{value};
    if (tokens.begin() == tokens.end() || !bhttp::validate_list(tokens)) {
      return ScanResult::malformed;
    }
    std::optional<std::uint64_t> length = head_.content_length;
    for (auto token : tokens) {
      std::uint64_t v = 0;
      // Digits only, all of them, within 64 bits (Beast's parse_dec).
      const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), v);
      if (error != std::errc() || end != token.data() + token.size()) return ScanResult::malformed;
      --unread;
      if (length.has_value() && v != *length) return ScanResult::malformed;
      length = v;
    }
    if (unread != 0) return ScanResult::malformed;
    head_.content_length = length;
    return ScanResult::complete;
  }
  if (ascii::iequals(name, "Transfer-Encoding")) {
    // After chunked or after Content-Length: refused while parsing. Chunked counts only as
    // the last coding; other codings are refuse_head's (501).
    if (head_.chunked || head_.content_length.has_value()) return ScanResult::malformed;
    const bhttp::token_list codings{value};
    auto it = std::find_if(codings.begin(), codings.end(),
                           [](auto coding) { return ascii::iequals(coding, "chunked"); });
    if (it != codings.end() && std::next(it) == codings.end()) head_.chunked = true;
  }
  return ScanResult::complete;
}

}  // namespace wg::http
