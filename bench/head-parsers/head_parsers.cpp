// Three ways to read the request heads the gateway serves, side by side on the same bytes:
// the session's own scanner (http::HeadScanner), Beast's request parser with the session's
// field allocator (server.http1_parser = "beast"), and Debian's libhttp-parser (the older
// Node.js parser), each producing what the session hands its handler: method, target,
// version, keep-alive and the header lines. bench/head-parsers.sh runs it.
//   wg-head-parsers READER ROUNDS   READER: scanner, beast or http_parser
// Prints the heads read per second; run under callgrind (--toggle-collect=read_heads*) the
// instructions per head are the instructions counted divided by the heads read.

#include <http_parser.h>

#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "http/head_checks.hpp"
#include "http/head_scanner.hpp"

namespace {

using wg::http::HeaderLine;

// What wg-bench sends (hot-hits), what curl sends, and a browser behind a CDN.
const std::vector<std::string> kHeads = {
    "GET /api/v1/widgets/widget/60320dd7ea900974d525446b/remote HTTP/1.1\r\nHost: "
    "127.0.0.1:8080\r\nUser-Agent: wg-bench\r\nAccept: application/json\r\n\r\n",
    "GET /api/v1/widgets/widget/60320dd7ea900974d525446b/reviews/remote?limit=20&skip=0 "
    "HTTP/1.1\r\nHost: gw.example\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
    "GET /api/v1/widgets/widget/60320dd7ea900974d525446b/remote HTTP/1.1\r\nHost: "
    "gw.example\r\nConnection: keep-alive\r\nsec-ch-ua: \"Chromium\";v=\"120\"\r\nAccept: "
    "application/json\r\nOrigin: https://shop.example\r\nUser-Agent: Mozilla/5.0 (X11; Linux "
    "x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36\r\nReferer: "
    "https://shop.example/p/1\r\nAccept-Encoding: gzip, deflate, br\r\nAccept-Language: "
    "en-US,en;q=0.9\r\nX-Forwarded-For: 203.0.113.7\r\nVia: 1.1 cdn\r\n\r\n",
};

struct Head {
  std::string_view method, target;
  unsigned version = 0;
  bool keep_alive = false;
  std::vector<HeaderLine> lines;
};

// The scanner, as the session uses it: one per connection, reset per request.
__attribute__((noinline)) std::size_t read_heads_scanner(long rounds) {
  wg::http::HeadScanner scanner(16 * 1024);
  std::size_t lines = 0;
  for (long r = 0; r < rounds; ++r) {
    for (const std::string& head : kHeads) {
      scanner.reset();
      if (scanner.scan(head) != wg::http::ScanResult::complete) std::abort();
      lines += scanner.headers().size() + scanner.head().keep_alive;
    }
  }
  return lines;
}

// Beast's parser, as the session's Beast path: a parser per request, the lines then listed.
__attribute__((noinline)) std::size_t read_heads_beast(long rounds) {
  std::vector<HeaderLine> lines;
  std::size_t count = 0;
  for (long r = 0; r < rounds; ++r) {
    for (const std::string& head : kHeads) {
      wg::http::HeadParser parser;
      parser.header_limit(16 * 1024);
      boost::system::error_code ec;
      parser.put(boost::asio::buffer(head), ec);
      if (ec || !parser.is_header_done()) std::abort();
      wg::http::header_lines(parser.get(), lines);
      const wg::http::ScannedHead scanned = wg::http::scanned_from(parser);
      count += lines.size() + scanned.keep_alive;
    }
  }
  return count;
}

// libhttp-parser: callbacks give the pieces as pointers into the buffer.
int on_url(http_parser* p, const char* at, std::size_t n) {
  static_cast<Head*>(p->data)->target = {at, n};
  return 0;
}
int on_field(http_parser* p, const char* at, std::size_t n) {
  static_cast<Head*>(p->data)->lines.push_back({{at, n}, {}});
  return 0;
}
int on_value(http_parser* p, const char* at, std::size_t n) {
  static_cast<Head*>(p->data)->lines.back().value = {at, n};
  return 0;
}
int on_headers_complete(http_parser* p) {
  Head& head = *static_cast<Head*>(p->data);
  head.version = p->http_major * 10 + p->http_minor;
  head.keep_alive = http_should_keep_alive(p) != 0;
  head.method = http_method_str(static_cast<http_method>(p->method));
  return 1;  // no body: stop after the head
}

__attribute__((noinline)) std::size_t read_heads_http_parser(long rounds) {
  http_parser_settings settings;
  http_parser_settings_init(&settings);
  settings.on_url = on_url;
  settings.on_header_field = on_field;
  settings.on_header_value = on_value;
  settings.on_headers_complete = on_headers_complete;
  Head head;
  head.lines.reserve(32);
  std::size_t count = 0;
  for (long r = 0; r < rounds; ++r) {
    for (const std::string& bytes : kHeads) {
      http_parser parser;
      http_parser_init(&parser, HTTP_REQUEST);
      parser.data = &head;
      head.lines.clear();
      http_parser_execute(&parser, &settings, bytes.data(), bytes.size());
      if (HTTP_PARSER_ERRNO(&parser) != HPE_OK &&
          HTTP_PARSER_ERRNO(&parser) != HPE_CB_headers_complete) {
        std::abort();
      }
      count += head.lines.size() + head.keep_alive;
    }
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: wg-head-parsers scanner|beast|http_parser ROUNDS\n");
    return 2;
  }
  const std::string_view reader = argv[1];
  const long rounds = std::atol(argv[2]);
  auto read = reader == "scanner"       ? read_heads_scanner
              : reader == "beast"       ? read_heads_beast
              : reader == "http_parser" ? read_heads_http_parser
                                        : nullptr;
  if (read == nullptr || rounds <= 0) return 2;
  const auto start = std::chrono::steady_clock::now();
  const std::size_t lines = read(rounds);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double heads = static_cast<double>(rounds) * static_cast<double>(kHeads.size());
  std::printf("%s heads=%.0f lines=%zu seconds=%.3f heads_per_second=%.0f\n", argv[1], heads, lines,
              seconds, heads / seconds);
  return 0;
}
