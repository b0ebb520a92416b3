#pragma once
// The HTTP/1.x session's checks of a request head, apart from its I/O: what Beast's parser
// accepts but the server refuses, and the look at raw bytes a refusal or a hand-over needs.
// Pure functions of the bytes and the parsed head, so they are fuzzed without a socket.

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "head_scanner.hpp"
#include "widget_gateway/http/refusal.hpp"
#include "widget_gateway/http/request_fields.hpp"
#include "widget_gateway/http/request_headers.hpp"

namespace wg::http {

using HeadParser =
    boost::beast::http::request_parser<boost::beast::http::string_body, FieldPoolAllocator<char>>;
using HeadRequest = HeadParser::value_type;

inline std::string_view buffered(const boost::beast::flat_buffer& buffer) {
  return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

// Whether the first bytes of a connection are the HTTP/2 preface: its first line, or (when
// fewer bytes came) at least "PRI", a method no HTTP/1.x request of ours uses.
bool starts_h2_preface(std::string_view bytes);

// Whether an over-long head is the request line's fault (414) rather than the fields' (431).
// `parsed_target`: the target's size once the request line parsed, 0 before; `bytes`: the
// buffered bytes from the request line on.
bool request_line_too_long(std::size_t parsed_target, std::string_view bytes,
                           std::size_t max_target);

// A head Beast's parser read, as the session acts on it (the scanner's ScannedHead), and its
// lines: the Beast path's, and what an HTTP/2 stream's fields give the handler.
ScannedHead scanned_from(const HeadParser& parser);
void header_lines(const RequestFields& fields, std::vector<HeaderLine>& lines);

// RFC 9112 2.2: a server SHOULD ignore an empty line or two before a request line (some
// clients send CRLF after a body). Only a few, so that they cannot keep a connection busy.
void skip_empty_lines(boost::beast::flat_buffer& buffer);

// Beast parses only HTTP/1.0 and HTTP/1.1. When the buffered request line is
// "METHOD SP TARGET SP HTTP/d.d" with a version other than those two (RFC 9112 2.3), points
// at the major digit in the buffer; nullptr otherwise (the line is malformed some other way).
char* other_version(boost::beast::flat_buffer& buffer);

// What Beast's parser accepts but this server refuses, checked right after the head is read
// (before any body byte): the first applicable refusal, or nullopt when the head may be served.
// Each of these answers closes the connection.
std::optional<Refusal> refuse_head(const ScannedHead& head, const RequestHeaders& headers,
                                   std::size_t max_target);

}  // namespace wg::http
