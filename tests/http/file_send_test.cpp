// The steps that send an answer's head, then its body (from memory, or from a file with
// sendfile), on a socket without blocking: whatever the socket takes at each step, the bytes
// read at the other end are the head then the body, once; a closed peer is an error, not a
// signal.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <csignal>
#include <string>

#include "http/file_send.hpp"

using wg::http::FileSendStep;
using wg::http::send_head_and_body;
using wg::http::send_head_and_file;

namespace {

struct Pair {
  int writer = -1, reader = -1;
  Pair() {
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    writer = fds[0];
    reader = fds[1];
    const int small = 8192;
    ::setsockopt(writer, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ::fcntl(writer, F_SETFL, ::fcntl(writer, F_GETFL) | O_NONBLOCK);
    ::fcntl(reader, F_SETFL, ::fcntl(reader, F_GETFL) | O_NONBLOCK);
  }
  ~Pair() {
    if (writer >= 0) ::close(writer);
    if (reader >= 0) ::close(reader);
  }
  std::string drain() {
    std::string out;
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(reader, buffer, sizeof buffer);
      if (n <= 0) break;
      out.append(buffer, static_cast<std::size_t>(n));
    }
    return out;
  }
};

int file_with(const std::string& bytes) {
  const int fd = ::memfd_create("test-body", MFD_CLOEXEC);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  return fd;
}

std::string body_of(std::size_t size) {
  std::string body(size, '\0');
  for (std::size_t i = 0; i < size; ++i) body[i] = static_cast<char>('a' + i * 7 % 26);
  return body;
}

// What the reader got when `step(sent)` was called until `total` bytes had gone, the reader
// taking what there was each time the socket was full; and how many times it was.
struct Stepped {
  std::string received;
  int full = 0;
};

template <class Step>
Stepped in_steps(Pair& pair, std::size_t total, Step step) {
  Stepped out;
  std::size_t sent = 0;
  while (sent < total) {
    const FileSendStep done = step(sent);
    sent += done.bytes;
    if (done.error == EAGAIN) {
      ++out.full;
      out.received += pair.drain();
    } else {
      BOOST_REQUIRE_EQUAL(done.error, 0);
    }
  }
  out.received += pair.drain();
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(file_send_test)

BOOST_AUTO_TEST_CASE(head_then_body_whatever_the_socket_takes_at_each_step) {
  std::signal(SIGPIPE, SIG_IGN);
  Pair pair;
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n";
  const std::string body = body_of(200'000);
  const int file = file_with(body);
  const Stepped out = in_steps(pair, head.size() + body.size(), [&](std::size_t sent) {
    return send_head_and_file(pair.writer, head, file, body.size(), sent);
  });
  ::close(file);
  BOOST_TEST(out.full > 0);  // the socket was full along the way: steps resumed mid-stream
  BOOST_TEST(out.received.size() == head.size() + body.size());
  BOOST_TEST((out.received == head + body));
}

BOOST_AUTO_TEST_CASE(a_step_starts_where_the_last_one_ended) {
  Pair pair;
  const std::string head = "HEAD-BYTES|";
  const std::string body = body_of(1000);
  const int file = file_with(body);
  // From the middle of the head, then from the middle of the body.
  FileSendStep step = send_head_and_file(pair.writer, head, file, body.size(), 5);
  BOOST_TEST(step.error == 0);
  BOOST_TEST(step.bytes == head.size() - 5 + body.size());
  BOOST_TEST((pair.drain() == head.substr(5) + body));
  step = send_head_and_file(pair.writer, head, file, body.size(), head.size() + 600);
  BOOST_TEST(step.error == 0);
  BOOST_TEST(step.bytes == 400u);
  BOOST_TEST((pair.drain() == body.substr(600)));
  // Only part of the file is the body: the rest is never sent.
  step = send_head_and_file(pair.writer, head, file, 10, 0);
  BOOST_TEST(step.error == 0);
  BOOST_TEST((pair.drain() == head + body.substr(0, 10)));
  ::close(file);
}

BOOST_AUTO_TEST_CASE(a_peer_that_closed_is_an_error) {
  std::signal(SIGPIPE, SIG_IGN);
  Pair pair;
  ::close(pair.reader);
  pair.reader = -1;
  const std::string body = body_of(50'000);
  const int file = file_with(body);
  const FileSendStep head_only = send_head_and_file(pair.writer, "HEAD", file, 0, 0);
  BOOST_TEST(head_only.error == EPIPE);
  const FileSendStep from_file = send_head_and_file(pair.writer, "HEAD", file, body.size(), 4);
  BOOST_TEST(from_file.error == EPIPE);
  BOOST_TEST(from_file.bytes == 0u);
  ::close(file);
}

BOOST_AUTO_TEST_CASE(a_body_in_memory_goes_with_its_head_whatever_the_socket_takes) {
  std::signal(SIGPIPE, SIG_IGN);
  Pair pair;
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n";
  const std::string body = body_of(200'000);
  const Stepped out = in_steps(pair, head.size() + body.size(), [&](std::size_t sent) {
    return send_head_and_body(pair.writer, head, body, sent);
  });
  BOOST_TEST(out.full > 0);
  BOOST_TEST((out.received == head + body));
  // From the middle of the head, from the middle of the body, a head alone.
  BOOST_TEST(send_head_and_body(pair.writer, head, "xyz", 5).bytes == head.size() - 5 + 3);
  BOOST_TEST((pair.drain() == head.substr(5) + "xyz"));
  BOOST_TEST(send_head_and_body(pair.writer, head, "xyz", head.size() + 1).bytes == 2u);
  BOOST_TEST((pair.drain() == "yz"));
  BOOST_TEST(send_head_and_body(pair.writer, head, "", 0).bytes == head.size());
  BOOST_TEST((pair.drain() == head));
  ::close(pair.reader);
  pair.reader = -1;
  BOOST_TEST(send_head_and_body(pair.writer, head, body, 0).error == EPIPE);
}

BOOST_AUTO_TEST_SUITE_END()  // file_send_test
