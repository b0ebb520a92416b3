#include "file_send.hpp"

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

namespace wg::http {

FileSendStep send_head_and_body(int socket, std::string_view head, std::string_view body,
                                std::size_t sent) {
  FileSendStep step;
  const std::size_t total = head.size() + body.size();
  while (sent < total) {
    iovec parts[2];
    int count = 0;
    if (sent < head.size()) {
      parts[count++] = {const_cast<char*>(head.data()) + sent, head.size() - sent};
      if (!body.empty()) parts[count++] = {const_cast<char*>(body.data()), body.size()};
    } else {
      const std::size_t from = sent - head.size();
      parts[count++] = {const_cast<char*>(body.data()) + from, body.size() - from};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<decltype(message.msg_iovlen)>(count);
    const ssize_t n = ::sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      step.error = errno == EWOULDBLOCK ? EAGAIN : errno;
      return step;
    }
    sent += static_cast<std::size_t>(n);
    step.bytes += static_cast<std::size_t>(n);
  }
  return step;
}

FileSendStep send_head_and_file(int socket, std::string_view head, int file, std::size_t length,
                                std::size_t sent) {
  FileSendStep step;
  const std::size_t total = head.size() + length;
  while (sent < total) {
    ssize_t n = 0;
    if (sent < head.size()) {
      const int more = length > 0 ? MSG_MORE : 0;
      n = ::send(socket, head.data() + sent, head.size() - sent,
                 MSG_NOSIGNAL | MSG_DONTWAIT | more);
    } else {
      off_t offset = static_cast<off_t>(sent - head.size());
      // sendfile moves at most 0x7ffff000 bytes per call.
      n = ::sendfile(socket, file, &offset, std::min<std::size_t>(total - sent, 0x7ffff000));
      if (n == 0) {
        step.error = EIO;  // the file is shorter than `length`: it cannot be, it is sealed
        return step;
      }
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      step.error = errno == EWOULDBLOCK ? EAGAIN : errno;
      return step;
    }
    sent += static_cast<std::size_t>(n);
    step.bytes += static_cast<std::size_t>(n);
  }
  return step;
}

}  // namespace wg::http
