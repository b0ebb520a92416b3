#pragma once
// What a request handler hands back to the HTTP session. Header fields are name/value pairs
// that each session serialises in its protocol's form; the body is a view kept alive by
// `body_owner`, so cached bytes are written without being copied.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "widget_gateway/http/fields.hpp"
#include "widget_gateway/http/head_template.hpp"

namespace wg::http {

enum class BodyMode {
  send,         // Content-Length and the body
  length_only,  // HEAD: Content-Length of the body that GET would send, no bytes
  none,         // 204/304: neither Content-Length nor body
};

struct Response {
  unsigned status = 200;
  // Fields sent before `headers`, from a template answers share (a hit's), with this answer's
  // numbers, from field `template_first` on (a 304 leaves out the Content-Type it starts with).
  std::shared_ptr<const HeadTemplate> head_template;
  HeadTemplate::Numbers numbers{};
  std::uint8_t template_first = 0;
  Fields headers;  // Date, Content-Length and Connection are the session's to add
  std::shared_ptr<const void> body_owner;
  // The memory body_owner keeps alive, when more than the body (a cache entry holds its other
  // codings too); 0 = the body's size. Counted while the answer waits to be sent.
  std::size_t owner_bytes = 0;
  std::string_view body;
  // The same bytes as `body` in a file (a descriptor body_owner keeps open), which a plain
  // HTTP/1.x session sends with sendfile; other sessions send `body`. -1: none.
  int body_file = -1;
  BodyMode body_mode = BodyMode::send;
  bool close = false;  // close the connection once this response is written

  void add_header(std::string_view name, std::string_view value) { headers.add(name, value); }
  // Takes ownership of `text` as the body.
  void set_body(std::string text) {
    auto owned = std::make_shared<const std::string>(std::move(text));
    body = *owned;
    body_owner = std::move(owned);
  }
};

// The standard reason phrase of `status` ("OK", "Not Found"...).
std::string_view reason_phrase(unsigned status);

}  // namespace wg::http
