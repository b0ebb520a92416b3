// The session's own request-head scanner, pure: what it reads from a head, the limits and
// framing rules it applies as Beast's parser does, and its answer on bytes that arrive in
// pieces. tests/fuzz/http1_scanner_fuzz.cpp holds it to the current build on every input.

#include "http/head_scanner.hpp"

#include <boost/test/unit_test.hpp>
#include <ostream>
#include <string>
#include <string_view>

namespace wg::http {
// For Boost.Test's messages.
std::ostream& operator<<(std::ostream& out, ScanResult result) {
  return out << "ScanResult(" << static_cast<int>(result) << ")";
}
}  // namespace wg::http

using wg::http::HeadScanner;
using wg::http::ScanResult;

namespace {

constexpr std::size_t kScanLimit = 1024;

ScanResult scan_once(std::string_view bytes, HeadScanner& scanner) {
  scanner.reset();
  return scanner.scan(bytes);
}

// The bytes given one more at a time, as a client sending a byte per packet: the first
// answer other than need_more, and the prefix it came at.
std::pair<ScanResult, std::size_t> scan_bytewise(std::string_view bytes, HeadScanner& scanner) {
  scanner.reset();
  for (std::size_t n = 1; n <= bytes.size(); ++n) {
    const ScanResult result = scanner.scan(bytes.substr(0, n));
    if (result != ScanResult::need_more) return {result, n};
  }
  return {ScanResult::need_more, bytes.size()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(head_scanner_test)

BOOST_AUTO_TEST_CASE(reads_the_request_line_and_the_lines_in_order) {
  HeadScanner scanner(kScanLimit);
  const std::string head =
      "GET /api/v1/widgets/widget/abc/remote?x=1 HTTP/1.1\r\nHost: gw\r\n"
      "Accept-Encoding:  br, gzip \r\nX-Forwarded-For: 10.0.0.1\r\nx-forwarded-for: "
      "10.0.0.2\r\n\r\n";
  const std::string bytes = head + "GET /next HTTP/1.1\r\n";
  BOOST_TEST(scan_once(bytes, scanner) == ScanResult::complete);
  const auto& h = scanner.head();
  BOOST_TEST(h.method == boost::beast::http::verb::get);
  BOOST_TEST(h.method_text == "GET");
  BOOST_TEST(h.target == "/api/v1/widgets/widget/abc/remote?x=1");
  BOOST_TEST(h.version == 11u);
  BOOST_TEST(h.keep_alive);
  BOOST_TEST(!h.body());
  BOOST_TEST(h.bytes == head.size());  // the pipelined request after it is left alone
  const auto headers = scanner.headers();
  BOOST_TEST(headers.size() == 4u);
  BOOST_TEST(headers.value("accept-encoding") == "br, gzip");  // trimmed, any case
  BOOST_TEST(headers.count("X-Forwarded-For") == 2u);
  std::string forwarded;
  headers.for_each("X-FORWARDED-FOR",
                   [&](std::string_view v) { forwarded += std::string(v) + ";"; });
  BOOST_TEST(forwarded == "10.0.0.1;10.0.0.2;");
  BOOST_TEST(headers.find("Origin") == nullptr);
}

BOOST_AUTO_TEST_CASE(a_head_in_pieces_gives_the_answer_the_whole_gives) {
  HeadScanner scanner(kScanLimit);
  const std::string head = "\r\nGET /x HTTP/1.0\r\nConnection: keep-alive\r\nX: a\r\n b\r\n\r\n";
  auto [result, at] = scan_bytewise(head, scanner);
  BOOST_TEST(result == ScanResult::complete);
  BOOST_TEST(at == head.size());
  BOOST_TEST(scanner.skipped() == 2u);
  BOOST_TEST(scanner.head().bytes == head.size() - 2);
  BOOST_TEST(scanner.head().version == 10u);
  BOOST_TEST(scanner.head().keep_alive);
  BOOST_TEST(scanner.headers().value("X") == "a b");  // obs-fold joined with one space

  // A version past 1.1 is judged by what follows it, not by where the read ended: in pieces,
  // once the head's end came (as Beast, which parses again only then).
  const std::string_view later = "GET /x HTTP/1.7\r\nHost: a\r\n\r\n";
  std::tie(result, at) = scan_bytewise(later, scanner);
  BOOST_TEST(result == ScanResult::bad_version);
  BOOST_TEST(at == later.size());
  BOOST_TEST(scan_once("GET /x HTTP/1.7", scanner) == ScanResult::need_more);
  BOOST_TEST(scan_once("GET /x HTTP/1.1x\r\n", scanner) == ScanResult::bad_version);
  // Empty lines: up to four are skipped; a lone CR may start one.
  BOOST_TEST(scan_once("\r\n\r", scanner) == ScanResult::need_more);
  BOOST_TEST(scanner.holds_nothing("\r\n\r\n"));
  BOOST_TEST(!scanner.holds_nothing("\r\n\r"));
  BOOST_TEST(scan_once("\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n", scanner) ==
             ScanResult::malformed);
}

BOOST_AUTO_TEST_CASE(limits_count_as_beast_counts_them) {
  HeadScanner scanner(kScanLimit);
  // The request line within the limit from its start: over it, the target is not parsed yet.
  const std::string long_line = "GET /" + std::string(kScanLimit, 'a') + " HTTP/1.1\r\n\r\n";
  BOOST_TEST(scan_once(long_line, scanner) == ScanResult::header_limit);
  BOOST_TEST(scanner.parsed_target_size() == 0u);
  BOOST_TEST(scan_once(long_line.substr(0, kScanLimit - 1), scanner) == ScanResult::need_more);
  // The fields within the limit from their first byte, so line + fields may pass it.
  const std::string line = "GET /" + std::string(500, 'a') + " HTTP/1.1\r\n";
  const std::string fields = "Host: a\r\nX: " + std::string(700, 'v') + "\r\n\r\n";
  BOOST_TEST(scan_once(line + fields, scanner) == ScanResult::complete);
  const std::string too_many = "Host: a\r\nX: " + std::string(kScanLimit, 'v') + "\r\n\r\n";
  BOOST_TEST(scan_once(line + too_many, scanner) == ScanResult::header_limit);
  BOOST_TEST(scanner.parsed_target_size() == 501u);
  // A value joined from obs-fold lines is bounded too (Beast's 4 KiB).
  HeadScanner roomy(64 * 1024);
  std::string folded = "GET / HTTP/1.1\r\nX: a\r\n";
  for (int i = 0; i < 80; ++i) folded += " " + std::string(60, 'f') + "\r\n";
  BOOST_TEST(scan_once(folded + "\r\n", roomy) == ScanResult::header_limit);
}

BOOST_AUTO_TEST_CASE(framing_is_refused_while_reading_as_beast_refuses_it) {
  HeadScanner scanner(kScanLimit);
  const std::string line = "POST / HTTP/1.1\r\nHost: a\r\n";
  BOOST_TEST(scan_once(line + "Content-Length: 2, 2\r\n\r\n", scanner) == ScanResult::complete);
  BOOST_TEST(scanner.head().content_length.value_or(0) == 2u);
  BOOST_TEST(scanner.head().body());
  BOOST_TEST(scan_once(line + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n", scanner) ==
             ScanResult::malformed);
  BOOST_TEST(scan_once(line + "Content-Length: 2x\r\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once(line + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", scanner) ==
             ScanResult::malformed);
  BOOST_TEST(scan_once(line + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", scanner) ==
             ScanResult::malformed);
  BOOST_TEST(scan_once(line + "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
                       scanner) == ScanResult::malformed);
  // Another coding then Content-Length reads; refuse_head refuses it (framing_conflict).
  BOOST_TEST(scan_once(line + "Transfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n", scanner) ==
             ScanResult::complete);
  BOOST_TEST(scan_once(line + "Transfer-Encoding: gzip, chunked\r\n\r\n", scanner) ==
             ScanResult::complete);
  BOOST_TEST(scanner.head().chunked);
  BOOST_TEST(scan_once(line + "Connection: close, ,keep-alive\r\n\r\n", scanner) ==
             ScanResult::complete);
  BOOST_TEST(!scanner.head().keep_alive);
  BOOST_TEST(scan_once(line + "Connection: \"close\"\r\n\r\n", scanner) == ScanResult::malformed);
}

BOOST_AUTO_TEST_CASE(what_beast_refuses_in_the_grammar_is_refused) {
  HeadScanner scanner(kScanLimit);
  BOOST_TEST(scan_once("GET  / HTTP/1.1\r\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once("G(T / HTTP/1.1\r\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once("GET /a\x7f HTTP/1.1\r\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once("GET / HTTP/1.1\r\nX Y: z\r\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once("GET / HTTP/1.1\r\n: z\r\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once("GET / HTTP/1.1\nX: z\n\n", scanner) == ScanResult::bad_version);
  BOOST_TEST(scan_once("GET / HTTP/1.1\r\nX: z\n\r\n", scanner) == ScanResult::malformed);
  BOOST_TEST(scan_once("GET / HTTP/1.1\r\nX: z\r\n\rX", scanner) == ScanResult::malformed);
  // obs-text passes in targets and values.
  BOOST_TEST(scan_once("GET /\xc3\xa9 HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n", scanner) ==
             ScanResult::complete);
  BOOST_TEST(scanner.headers().value("x") == "caf\xc3\xa9");
  // A method Beast does not know is kept as text.
  BOOST_TEST(scan_once("FROB / HTTP/1.1\r\n\r\n", scanner) == ScanResult::complete);
  BOOST_TEST(scanner.head().method == boost::beast::http::verb::unknown);
  BOOST_TEST(scanner.head().method_text == "FROB");
}

BOOST_AUTO_TEST_SUITE_END()
