#include "response_head.hpp"

#include <charconv>
#include <cstring>

namespace wg::http {

namespace {

// Fields HTTP/2 forbids (RFC 9113 8.2.2), and those the session writes itself.
bool dropped_h2_field(std::string_view lower_name) {
  return lower_name == "connection" || lower_name == "keep-alive" ||
         lower_name == "transfer-encoding" || lower_name == "upgrade" ||
         lower_name == "proxy-connection" || lower_name == "content-length" || lower_name == "date";
}

void append_number(std::string& out, std::size_t value) {
  char digits[20];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

}  // namespace

void write_http1_head(std::string& out, const Response& response, std::string_view date, bool close,
                      unsigned version) {
  out.clear();
  out.append("HTTP/1.1 ");
  append_number(out, response.status);
  out.push_back(' ');
  out.append(reason_phrase(response.status)).append("\r\nDate: ").append(date).append("\r\n");
  if (response.head_template) {
    response.head_template->write_http1(out, response.numbers, response.template_first);
  }
  // The fields' lines in one go: sized once, then copied piece by piece (the hit path sends a
  // dozen fields, and a string append per piece costs more than the bytes it copies).
  std::size_t lines = 0;
  for (const auto [name, value] : response.headers) lines += name.size() + value.size() + 4;
  std::size_t at = out.size();
  out.resize(at + lines);
  char* p = out.data();
  for (const auto [name, value] : response.headers) {
    std::memcpy(p + at, name.data(), name.size());
    at += name.size();
    std::memcpy(p + at, ": ", 2);
    at += 2;
    std::memcpy(p + at, value.data(), value.size());
    at += value.size();
    std::memcpy(p + at, "\r\n", 2);
    at += 2;
  }
  if (response.body_mode != BodyMode::none) {
    out.append("Content-Length: ");
    append_number(out, response.body.size());
    out.append("\r\n");
  }
  if (close) {
    out.append("Connection: close\r\n");
  } else if (version == 10) {
    // HTTP/1.0 closes by default: a connection kept open must say so (RFC 9112 9.3).
    out.append("Connection: keep-alive\r\n");
  }
  out.append("\r\n");
}

H2Head::H2Head(Response& response, std::string_view date) {
  // Three digits: a status outside 100..999 is a bug, sent as 500 rather than malformed.
  const unsigned status = response.status >= 100 && response.status <= 999 ? response.status : 500;
  std::to_chars(status_, status_ + sizeof status_, status);
  push(":status", std::string_view(status_, sizeof status_));
  push("date", date);
  if (response.head_template) {
    response.head_template->for_each_h2(
        response.numbers, response.template_first, values_,
        [this](std::string_view name, std::string_view value) { push(name, value); });
  }
  response.headers.lower_case_names();
  for (const auto [name, value] : response.headers) {
    if (!dropped_h2_field(name)) push(name, value);
  }
  if (response.body_mode != BodyMode::none) {
    const auto end = std::to_chars(length_, length_ + sizeof length_, response.body.size()).ptr;
    push("content-length", std::string_view(length_, end - length_));
  }
}

void H2Head::push(std::string_view name, std::string_view value) {
  // nghttp2 copies names and values (no NO_COPY flags): the views need only outlive the call
  // that submits them.
  pairs_[size_++] = nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                               reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())),
                               name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace wg::http
