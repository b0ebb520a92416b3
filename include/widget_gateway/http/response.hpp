#pragma once
// What a request handler hands back to the HTTP session. Header lines are pre-formatted so a
// cached entry can carry them ready-made; the body is a view kept alive by `body_owner`, so
// cached bytes are written without being copied.

#include <memory>
#include <string>
#include <string_view>

namespace wg::http {

enum class BodyMode {
  send,         // Content-Length and the body
  length_only,  // HEAD: Content-Length of the body that GET would send, no bytes
  none,         // 204/304: neither Content-Length nor body
};

struct Response {
  unsigned status = 200;
  std::string headers;  // "Name: value\r\n" lines; Date, Content-Length, Connection are added
  std::shared_ptr<const void> body_owner;
  std::string_view body;
  BodyMode body_mode = BodyMode::send;
  bool close = false;  // close the connection once this response is written

  void add_header(std::string_view name, std::string_view value) {
    headers.append(name).append(": ").append(value).append("\r\n");
  }
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
