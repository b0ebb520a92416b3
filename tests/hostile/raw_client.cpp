#include "raw_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace wg::test {
namespace {

using Steady = std::chrono::steady_clock;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::string RawResponse::header(std::string_view name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

RawClient::RawClient(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return;
  }
  // One byte per write must mean one segment per byte, not Nagle's batching.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fd_ = fd;
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawClient::send(std::string_view bytes, bool one_byte_per_write) {
  if (fd_ < 0) return false;
  const std::size_t step = one_byte_per_write ? 1 : bytes.size();
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), std::min(step, bytes.size()), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool RawClient::fill(Steady::time_point deadline) {
  if (fd_ < 0 || eof_) return false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
    if (left.count() <= 0) {
      error_ = "timed out";
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // the deadline check above ends the loop
    if (r < 0) {
      error_ = "poll failed";
      return false;
    }
    char chunk[8192];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      error_ = "closed by peer";
      return false;
    }
    pending_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

std::optional<RawResponse> RawClient::read_response(bool head_request,
                                                    std::chrono::milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  std::size_t head_end;
  while ((head_end = pending_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) return std::nullopt;
  }
  std::string_view head(pending_.data(), head_end);
  RawResponse response;

  auto line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  if (!status_line.starts_with("HTTP/1.1 ") || status_line.size() < 12 || status_line[12] != ' ') {
    error_ = "bad status line: " + std::string(status_line);
    return std::nullopt;
  }
  std::from_chars(status_line.data() + 9, status_line.data() + 12, response.status);

  std::size_t content_length = 0;
  std::string_view rest = line_end == std::string_view::npos ? "" : head.substr(line_end + 2);
  while (!rest.empty()) {
    auto eol = rest.find("\r\n");
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? "" : rest.substr(eol + 2);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      error_ = "bad header line: " + std::string(line);
      return std::nullopt;
    }
    std::string name = lower(line.substr(0, colon));
    std::string value(trim(line.substr(colon + 1)));
    if (name == "content-length") {
      ++response.content_length_fields;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), content_length);
      if (ec != std::errc() || ptr != value.data() + value.size()) {
        error_ = "bad Content-Length: " + value;
        return std::nullopt;
      }
    }
    auto [it, inserted] = response.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }
  pending_.erase(0, head_end + 4);

  const bool bodiless =
      head_request || response.status < 200 || response.status == 204 || response.status == 304;
  if (!bodiless) {
    if (response.content_length_fields != 1) {
      error_ = "a response with a body needs exactly one Content-Length";
      return std::nullopt;
    }
    while (pending_.size() < content_length) {
      if (!fill(deadline)) {
        error_ = "body shorter than its Content-Length (" + error_ + ")";
        return std::nullopt;
      }
    }
    response.body = pending_.substr(0, content_length);
    pending_.erase(0, content_length);
  }
  return response;
}

bool RawClient::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  while (pending_.empty()) {
    if (!fill(deadline)) return eof_;
  }
  error_ = "unexpected bytes: " + pending_.substr(0, 200);
  return false;
}

}  // namespace wg::test
