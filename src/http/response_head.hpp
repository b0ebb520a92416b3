#pragma once
// A response's head in each protocol's form: HTTP/1.1 text for one gather write with the body,
// HTTP/2 name/value pairs for nghttp2. Both read the response's fields as they are stored,
// without parsing anything back; Date, Content-Length and Connection are the sessions' own.

#include <nghttp2/nghttp2.h>

#include <array>
#include <string>
#include <string_view>

#include "widget_gateway/http/response.hpp"

namespace wg::http {

// The status line, Date, the template's fields, each field as "Name: value", Content-Length (unless the body mode is
// none), "Connection: close" when the connection ends after this response (or keep-alive for
// an HTTP/1.0 client, `version` 10, whose connection stays open), and the empty line. `out` is
// cleared first: a session reuses one buffer for every head.
void write_http1_head(std::string& out, const Response& response, std::string_view date, bool close,
                      unsigned version = 11);

// The HEADERS of one HTTP/2 response: :status, date, the template's fields and the fields with
// lower-case names (those
// HTTP/2 forbids, RFC 9113 8.2.2, and those the session writes itself are left out), and
// content-length unless the body mode is none. The pairs point into `response`, whose names
// are lower-cased in place, and into this object: both must outlive the submission to nghttp2
// (which copies them).
class H2Head {
 public:
  H2Head(Response& response, std::string_view date);
  H2Head(const H2Head&) = delete;
  H2Head& operator=(const H2Head&) = delete;

  const nghttp2_nv* data() const { return pairs_.data(); }
  std::size_t size() const { return size_; }

 private:
  void push(std::string_view name, std::string_view value);

  std::array<nghttp2_nv, HeadTemplate::kMaxFields + Fields::kMaxFields + 3> pairs_;
  std::array<char, HeadTemplate::kSlotValuesBytes> values_;  // the template's slotted values
  std::size_t size_ = 0;
  char status_[3];
  char length_[20];
};

}  // namespace wg::http
