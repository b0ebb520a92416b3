// Fuzz target: the HTTP/1.x session's reading of request heads, as HttpSession::run does it
// (the first bytes checked for the HTTP/2 preface, empty lines skipped, Beast's parser under
// the listener's head limit, HTTP/1.2+ rewritten to 1.1, then refuse_head), on a byte stream
// delivered in chunks of a size the input picks. Input: one byte choosing the chunk size,
// then what a client sends on a connection (pipelined requests are read one after another).
// Invariants: a head that passes the checks has what they promise (a target within the limit,
// at most kMaxHeaderFields fields, exactly one Host on HTTP/1.1, no framing conflict, chunked
// as the only coding), a refusal names the first rule broken, and other_version points at a
// "HTTP/d.d" of the buffered request line.

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "chunked_reader.hpp"
#include "fuzz_check.hpp"
#include "http/head_checks.hpp"
#include "http/header_limits.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using wg::http::Refusal;

// Small limits, so that inputs of a few KiB reach them; the rules do not depend on the values.
constexpr std::size_t kMaxHeaderBytes = 1024;
constexpr std::size_t kMaxTargetBytes = 256;
constexpr int kMaxRequests = 16;

// The rules of refuse_head restated field by field: what a head it lets through must satisfy.
void check_served(const wg::http::HeadRequest& req) {
  std::size_t fields = 0, hosts = 0, content_lengths = 0, codings = 0;
  bool last_chunked = false;
  for (const auto& field : req) {
    ++fields;
    if (field.name() == bhttp::field::host) ++hosts;
    if (field.name() == bhttp::field::content_length) ++content_lengths;
    if (field.name() == bhttp::field::transfer_encoding) {
      for (auto coding : bhttp::token_list(field.value())) {
        ++codings;
        last_chunked = beast::iequals(coding, "chunked");
      }
    }
  }
  WG_FUZZ_CHECK(req.target().size() <= kMaxTargetBytes);
  WG_FUZZ_CHECK(fields <= wg::http::kMaxHeaderFields);
  WG_FUZZ_CHECK(hosts == 1 || (hosts == 0 && req.version() == 10));
  WG_FUZZ_CHECK(req.version() == 10 || req.version() == 11);
  if (req.count(bhttp::field::transfer_encoding) > 0) {
    WG_FUZZ_CHECK(content_lengths == 0);
    WG_FUZZ_CHECK(codings == 1 && last_chunked);
  }
}

void check_refused(const wg::http::HeadRequest& req, Refusal why) {
  // The target rule comes first, so it alone decides whether that is the refusal.
  WG_FUZZ_CHECK((why == Refusal::target_too_long) == (req.target().size() > kMaxTargetBytes));
  if (why == Refusal::duplicate_host) WG_FUZZ_CHECK(req.count(bhttp::field::host) > 1);
  if (why == Refusal::missing_host) {
    WG_FUZZ_CHECK(req.count(bhttp::field::host) == 0 && req.version() == 11);
  }
  if (why == Refusal::framing_conflict) {
    WG_FUZZ_CHECK(req.count(bhttp::field::transfer_encoding) > 0 &&
                  req.count(bhttp::field::content_length) > 0);
  }
  if (why == Refusal::transfer_coding) {
    WG_FUZZ_CHECK(req.count(bhttp::field::transfer_encoding) > 0);
  }
}

void check_other_version(const beast::flat_buffer& buffer, const char* major) {
  const std::string_view bytes = wg::http::buffered(buffer);
  WG_FUZZ_CHECK(major >= bytes.data() + 5 && major + 5 <= bytes.data() + bytes.size());
  const std::string_view version(major - 5, 8);  // "HTTP/d.d"
  WG_FUZZ_CHECK(version.starts_with("HTTP/") && version[6] == '.');
  WG_FUZZ_CHECK(version != "HTTP/1.0" && version != "HTTP/1.1");
  WG_FUZZ_CHECK(std::string_view(major + 3, 2) == "\r\n");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = 1 + static_cast<std::size_t>(data[0] % 64) * 67;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  wg::fuzz::ChunkedReader stream(bytes, chunk);
  beast::flat_buffer buffer;
  boost::system::error_code ec;

  // The session's first read decides between HTTP/1.x and h2c prior knowledge.
  const std::size_t first = stream.read_some(buffer.prepare(4096), ec);
  if (ec) return 0;
  buffer.commit(first);
  if (wg::http::starts_h2_preface(wg::http::buffered(buffer))) {
    WG_FUZZ_CHECK(bytes.starts_with("PRI"));
    return 0;
  }

  bool version_rewritten = false;
  for (int requests = 0; requests < kMaxRequests;) {
    wg::http::skip_empty_lines(buffer);
    wg::http::HeadParser parser;
    parser.header_limit(static_cast<std::uint32_t>(kMaxHeaderBytes));
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    bhttp::read_header(stream, buffer, parser, ec);
    if (ec == bhttp::error::header_limit) {
      wg::http::request_line_too_long(parser.get().target().size(), wg::http::buffered(buffer),
                                      kMaxTargetBytes);  // 414 or 431
      return 0;
    }
    if (ec == bhttp::error::bad_version) {
      if (char* major = wg::http::other_version(buffer)) {
        check_other_version(buffer, major);
        if (*major == '1' && !version_rewritten) {
          major[2] = '1';
          version_rewritten = true;
          continue;  // parsed again as HTTP/1.1
        }
      }
      return 0;  // 505 or 400
    }
    if (ec) return 0;  // malformed (400) or the client went away

    const wg::http::HeadRequest& req = parser.get();
    if (version_rewritten) WG_FUZZ_CHECK(req.version() == 11);
    version_rewritten = false;
    ++requests;
    std::vector<wg::http::HeaderLine> lines;
    wg::http::header_lines(req, lines);
    if (const std::optional<Refusal> why = wg::http::refuse_head(
            wg::http::scanned_from(parser), wg::http::RequestHeaders(lines), kMaxTargetBytes)) {
      check_refused(req, *why);
      return 0;
    }
    check_served(req);
    // CONNECT, or a body (the public listener takes none): answered, then the connection
    // closes. Otherwise the next pipelined request follows when the connection is kept.
    if (req.method() == bhttp::verb::connect || !parser.is_done() || !req.keep_alive()) return 0;
  }
  return 0;
}
