#pragma once
// Sending an HTTP/1.x answer over plain TCP, straight to the socket: no Asio operation, no
// scheduler pass when the socket has room (the usual case). One step sends what the socket
// takes now, without blocking; the session waits for room and the send rate between steps.
// - A body in memory: head and body in one sendmsg(2), one segment when they fit.
// - A body in a file: the head with send(MSG_MORE), so that it leaves in the body's first
//   segment, then the body with sendfile(2), from the file's pages to the socket without a
//   copy through user space.
//
// sendfile has no MSG_NOSIGNAL: on a socket the peer has closed it raises SIGPIPE, which the
// process ignores (gateway/app.cpp).

#include <cstddef>
#include <string_view>

namespace wg::http {

struct FileSendStep {
  std::size_t bytes = 0;  // sent by this step
  int error = 0;          // 0: all sent; EAGAIN: the socket is full; otherwise errno
};

// From byte `sent` of head + body on, as much as `socket` takes now.
FileSendStep send_head_and_body(int socket, std::string_view head, std::string_view body,
                                std::size_t sent);

// From byte `sent` of head + the first `length` bytes of `file` on, as much as `socket` takes
// now.
FileSendStep send_head_and_file(int socket, std::string_view head, int file, std::size_t length,
                                std::size_t sent);

}  // namespace wg::http
