#include "file_send.hpp"

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

namespace wg::http {

namespace {

// Calls `once(sent)`, one system call (the bytes it sent, or -1 and errno), until everything up
// to `total` went out or the socket is full: one rule for EINTR, EAGAIN and errors.
template <class SendOnce>
FileSendStep send_while_room(std::size_t sent, std::size_t total, SendOnce once) {
  FileSendStep step;
  while (sent < total) {
    const ssize_t n = once(sent);
    if (n < 0) {
      if (errno == EINTR) continue;
      step.error = errno == EWOULDBLOCK ? EAGAIN : errno;
      return step;
    }
    if (n == 0) {
      step.error = EIO;  // a file shorter than its length: it cannot be, it is sealed
      return step;
    }
    sent += static_cast<std::size_t>(n);
    step.bytes += static_cast<std::size_t>(n);
  }
  return step;
}

}  // namespace

FileSendStep send_head_and_body(int socket, std::string_view head, std::string_view body,
                                std::size_t sent) {
  return send_while_room(sent, head.size() + body.size(), [&](std::size_t from) {
    iovec parts[2];
    int count = 0;
    if (from < head.size()) {
      parts[count++] = {const_cast<char*>(head.data()) + from, head.size() - from};
      if (!body.empty()) parts[count++] = {const_cast<char*>(body.data()), body.size()};
    } else {
      const std::size_t at = from - head.size();
      parts[count++] = {const_cast<char*>(body.data()) + at, body.size() - at};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<decltype(message.msg_iovlen)>(count);
    return ::sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  });
}

FileSendStep send_head_and_file(int socket, std::string_view head, int file, std::size_t length,
                                std::size_t sent) {
  const std::size_t total = head.size() + length;
  return send_while_room(sent, total, [&](std::size_t from) -> ssize_t {
    if (from < head.size()) {
      const int more = length > 0 ? MSG_MORE : 0;
      return ::send(socket, head.data() + from, head.size() - from,
                    MSG_NOSIGNAL | MSG_DONTWAIT | more);
    }
    off_t offset = static_cast<off_t>(from - head.size());
    // sendfile moves at most 0x7ffff000 bytes per call.
    return ::sendfile(socket, file, &offset, std::min<std::size_t>(total - from, 0x7ffff000));
  });
}

}  // namespace wg::http
