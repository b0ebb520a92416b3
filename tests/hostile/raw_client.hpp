#pragma once
// A deliberately dumb HTTP/1.1 client over a raw loopback socket, for sending bytes no real
// client would: it writes exactly what it is given (optionally one byte per write) and parses
// answers strictly, so a wrong Content-Length or a stray body byte shows up as a parse failure
// of the next answer. Every read has a deadline.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace wg::test {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  int content_length_fields = 0;               // how many Content-Length lines there were
  std::string body;
  std::string header(std::string_view name) const;
};

class RawClient {
 public:
  // Connects to 127.0.0.1:port; connected() tells whether it worked.
  explicit RawClient(std::uint16_t port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // False when the peer is gone before everything was written.
  bool send(std::string_view bytes, bool one_byte_per_write = false);
  // Reads one answer. `head_request` answers (and 1xx/204/304) carry no body whatever their
  // Content-Length says; any other answer needs exactly one Content-Length (ours are never
  // chunked). nullopt when the peer closed, the bytes did not parse, or the deadline passed;
  // error() says which.
  std::optional<RawResponse> read_response(bool head_request,
                                           std::chrono::milliseconds timeout = kTimeout);
  // True when the peer closes (EOF or reset) with no further byte before the deadline.
  bool closed_by_peer(std::chrono::milliseconds timeout = kTimeout);
  const std::string& error() const { return error_; }

  static constexpr std::chrono::milliseconds kTimeout{15000};

 private:
  // Appends whatever arrives before the deadline; false on EOF, reset or timeout.
  bool fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string pending_;  // received, not yet parsed
  bool eof_ = false;
  std::string error_;
};

}  // namespace wg::test
