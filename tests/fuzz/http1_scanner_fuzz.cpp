// Fuzz target, differential: the HTTP/1.x session's own head scanner against the current
// build's reading of heads (Beast's parser with the session's rules on top), on every input.
//
// The oracle is the current build given the whole input in one read, then the end of the
// stream: HttpSession::run's Beast path restated (empty lines skipped, Beast's parser under the
// head limit, 414 against 431, HTTP/1.x rewritten to 1.1 once, refuse_head, CONNECT). The
// scanner's path is the session's too, on the same bytes delivered in reads of a size the
// input picks: scan, read more while it needs more, the end of the stream, the hand-over to
// Beast's parser for a request with a body. Both must give the same sequence of answers:
// for each pipelined request, the same refusal, or the same method, target, version,
// keep-alive, framing and header lines (names and values, in order).
//
// Why the whole input in one read: Beast's own answer depends in a few corners on where the
// reads split the bytes (a version past 1.1 read before its CRLF arrived, the head limit
// counted per read); the scanner's does not, and it gives what the current build gives when
// nothing is split. tests/fuzz/http1_head_fuzz.cpp keeps checking the Beast path on split
// reads.
//
// Input: one byte choosing the read size, then what a client sends on a connection.

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chunked_reader.hpp"
#include "fuzz_check.hpp"
#include "http/head_checks.hpp"
#include "http/head_scanner.hpp"

namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using wg::http::HeaderLine;
using wg::http::Refusal;
using wg::http::RequestHeaders;
using wg::http::ScannedHead;
using wg::http::ScanResult;

// Small limits, so that inputs of a few KiB reach them; the rules do not depend on the values.
constexpr std::size_t kHeaderLimit = 1024;
constexpr std::size_t kMaxTarget = 256;
constexpr int kMaxRequests = 16;

// One request's answer, as text: what the two paths must agree on.
using Answers = std::vector<std::string>;

std::string refused(Refusal why, bool head) {
  return "refused " + std::to_string(static_cast<int>(why)) + (head ? " HEAD" : "");
}

// The lines as Beast's fields list them: a line whose name came before (in any case) goes
// right after the last line of that name. Handlers look lines up by name, so only the order
// within a name can tell, and that order is the client's in both.
std::vector<HeaderLine> grouped(const RequestHeaders& headers) {
  std::vector<HeaderLine> lines;
  for (const HeaderLine& line : headers) {
    auto at = lines.end();
    for (auto it = lines.begin(); it != lines.end(); ++it) {
      if (wg::ascii::iequals(it->name, line.name)) at = it + 1;
    }
    lines.insert(at, line);
  }
  return lines;
}

std::string served(const ScannedHead& h, const RequestHeaders& headers) {
  std::string out = "served " + std::to_string(static_cast<int>(h.method)) + " [" +
                    std::string(h.method_text) + "] [" + std::string(h.target) + "] " +
                    std::to_string(h.version) + (h.keep_alive ? " keep" : " close") +
                    (h.chunked ? " chunked" : "") +
                    " length=" + (h.content_length ? std::to_string(*h.content_length) : "-");
  for (const HeaderLine& line : grouped(headers)) {
    out += "\n  [" + std::string(line.name) + "]: [" + std::string(line.value) + "]";
  }
  return out;
}

// After a head read either way, as the session goes on: its refusals, then whether the next
// pipelined request is read (no body, kept alive, not CONNECT).
bool after_head(const ScannedHead& h, const RequestHeaders& headers, Answers& answers) {
  answers.push_back(served(h, headers));
  const bool head = h.method == bhttp::verb::head;
  if (auto why = wg::http::refuse_head(h, headers, kMaxTarget)) {
    answers.push_back(refused(*why, head));
    return false;
  }
  if (h.method == bhttp::verb::connect) {
    answers.push_back(refused(Refusal::tunnel, head));
    return false;
  }
  return !h.body() && h.keep_alive;
}

// The session's answer to a head that was not read: true when it is read again as HTTP/1.1.
bool after_failure(ScanResult verdict, std::size_t parsed_target, beast::flat_buffer& buffer,
                   bool& rewritten, Answers& answers) {
  if (verdict == ScanResult::header_limit) {
    const bool line =
        wg::http::request_line_too_long(parsed_target, wg::http::buffered(buffer), kMaxTarget);
    answers.push_back(refused(line ? Refusal::target_too_long : Refusal::head_too_large, false));
    return false;
  }
  if (char* major =
          verdict == ScanResult::bad_version ? wg::http::other_version(buffer) : nullptr) {
    if (*major == '1' && !rewritten) {
      major[2] = '1';
      rewritten = true;
      return true;
    }
    answers.push_back(refused(Refusal::version, wg::http::buffered(buffer).starts_with("HEAD ")));
    return false;
  }
  answers.push_back(refused(Refusal::malformed, false));
  return false;
}

std::optional<ScanResult> verdict_of(const boost::system::error_code& ec) {
  if (!ec) return ScanResult::complete;
  if (ec == bhttp::error::header_limit) return ScanResult::header_limit;
  if (ec == bhttp::error::bad_version) return ScanResult::bad_version;
  if (ec == bhttp::error::end_of_stream) return std::nullopt;
  return ScanResult::malformed;
}

// HttpSession::parse_buffered_head, then read_rest_of_head with no more bytes to come (`more`
// false) or from `stream`.
boost::system::error_code beast_read_head(wg::http::HeadParser& parser, beast::flat_buffer& buffer,
                                          wg::fuzz::ChunkedReader* stream) {
  for (;;) {
    boost::system::error_code ec = bhttp::error::need_more;
    while (buffer.size() > 0) {
      buffer.consume(parser.put(buffer.data(), ec));
      if (ec == bhttp::error::need_more) break;
      if (ec || parser.is_header_done()) return ec;
      ec = bhttp::error::need_more;
    }
    std::size_t n = 0;
    boost::system::error_code read_ec = boost::asio::error::eof;
    if (stream != nullptr) n = stream->read_some(buffer.prepare(4096), read_ec);
    buffer.commit(n);
    if (read_ec == boost::asio::error::eof) {
      if (!parser.got_some()) return bhttp::error::end_of_stream;
      ec = {};
      parser.put_eof(ec);
      return ec;
    }
  }
}

void start_parser(std::optional<wg::http::HeadParser>& parser) {
  parser.emplace();
  parser->header_limit(static_cast<std::uint32_t>(kHeaderLimit));
  parser->body_limit(std::numeric_limits<std::uint64_t>::max());
}

// The current build, the whole input buffered at once.
Answers current_build(std::string_view bytes) {
  Answers answers;
  beast::flat_buffer buffer;
  buffer.commit(boost::asio::buffer_copy(buffer.prepare(bytes.size()),
                                         boost::asio::buffer(bytes.data(), bytes.size())));
  bool rewritten = false;
  std::vector<HeaderLine> lines;
  for (int requests = 0; requests < kMaxRequests;) {
    if (buffer.size() == 0) break;  // the end of the stream between requests
    wg::http::skip_empty_lines(buffer);
    std::optional<wg::http::HeadParser> parser;
    start_parser(parser);
    const std::optional<ScanResult> verdict = verdict_of(beast_read_head(*parser, buffer, nullptr));
    if (!verdict) break;
    if (*verdict != ScanResult::complete) {
      if (after_failure(*verdict, parser->get().target().size(), buffer, rewritten, answers)) {
        continue;
      }
      break;
    }
    rewritten = false;
    ++requests;
    wg::http::header_lines(parser->get(), lines);
    if (!after_head(wg::http::scanned_from(*parser), RequestHeaders(lines), answers)) break;
  }
  return answers;
}

// The scanner's path, the input read `chunk` bytes at a time.
Answers scanner_path(std::string_view bytes, std::size_t chunk) {
  Answers answers;
  wg::fuzz::ChunkedReader stream(bytes, chunk);
  beast::flat_buffer buffer;
  wg::http::HeadScanner scanner(kHeaderLimit);
  bool rewritten = false;
  std::vector<HeaderLine> lines;
  auto read = [&] {
    boost::system::error_code ec;
    buffer.commit(stream.read_some(buffer.prepare(4096), ec));
    return !ec;
  };
  for (int requests = 0; requests < kMaxRequests;) {
    if (buffer.size() == 0 && !read()) break;
    scanner.reset();
    std::optional<ScanResult> verdict = scanner.scan(wg::http::buffered(buffer));
    while (verdict == ScanResult::need_more) {
      if (read()) {
        verdict = scanner.scan(wg::http::buffered(buffer));
      } else if (scanner.holds_nothing(wg::http::buffered(buffer))) {
        verdict.reset();
      } else {
        verdict = scanner.finish(wg::http::buffered(buffer));
      }
    }
    if (!verdict) break;
    buffer.consume(scanner.skipped());
    if (*verdict != ScanResult::complete) {
      if (after_failure(*verdict, scanner.parsed_target_size(), buffer, rewritten, answers)) {
        continue;
      }
      break;
    }
    rewritten = false;
    ++requests;
    if (scanner.head().body()) {
      // Beast's parser reads the head again, and the body: it must see the same head.
      wg::http::skip_empty_lines(buffer);
      std::optional<wg::http::HeadParser> parser;
      start_parser(parser);
      WG_FUZZ_CHECK(!beast_read_head(*parser, buffer, &stream));
      wg::http::header_lines(parser->get(), lines);
      const Answers again{served(wg::http::scanned_from(*parser), RequestHeaders(lines))};
      WG_FUZZ_CHECK(again.front() == served(scanner.head(), scanner.headers()));
      after_head(wg::http::scanned_from(*parser), RequestHeaders(lines), answers);
      break;
    }
    const bool more = after_head(scanner.head(), scanner.headers(), answers);
    buffer.consume(scanner.head().bytes);
    if (!more) break;
  }
  return answers;
}

void print(const char* who, const Answers& answers) {
  std::fprintf(stderr, "%s:\n", who);
  for (const std::string& answer : answers) std::fprintf(stderr, "  %s\n", answer.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = 1 + static_cast<std::size_t>(data[0] % 64) * 67;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  // The HTTP/2 preface is the session's first read's business, before either reader.
  if (wg::http::starts_h2_preface(bytes) || wg::http::starts_h2_preface(bytes.substr(0, chunk))) {
    return 0;
  }
  const Answers expected = current_build(bytes);
  const Answers scanned = scanner_path(bytes, chunk);
  if (scanned != expected) {
    print("current build (one read)", expected);
    print("scanner", scanned);
  }
  WG_FUZZ_CHECK(scanned == expected);
  return 0;
}
