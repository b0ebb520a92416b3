// Bodies copied into sealed memory files for sendfile: the same bytes, no way to change them,
// and never more open than the bound.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <memory>
#include <string>
#include <vector>

#include "widget_gateway/cache/body_file.hpp"

using wg::cache::BodyFile;
using wg::cache::BodyFiles;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(body_file_test)

BOOST_AUTO_TEST_CASE(a_file_holds_the_bytes_and_cannot_change) {
  auto files = std::make_shared<BodyFiles>(4);
  std::string body(200'000, '\0');
  for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>(i * 31 % 251);
  const auto file = files->make(body);
  BOOST_REQUIRE(file);
  BOOST_TEST(file->size() == body.size());
  BOOST_TEST((read_all(file->fd()) == body));
  // Sealed: neither written, grown nor shrunk, whatever holds the descriptor.
  BOOST_TEST(::pwrite(file->fd(), "x", 1, 0) == -1);
  BOOST_TEST(::ftruncate(file->fd(), 10) == -1);
  BOOST_TEST(::ftruncate(file->fd(), 300'000) == -1);
  BOOST_TEST((read_all(file->fd()) == body));
  BOOST_TEST((::fcntl(file->fd(), F_GETFD) & FD_CLOEXEC) != 0);
}

BOOST_AUTO_TEST_CASE(no_more_files_than_the_bound_are_open) {
  auto files = std::make_shared<BodyFiles>(2);
  auto a = files->make("a");
  auto b = files->make("b");
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(b);
  BOOST_TEST(files->open() == 2u);
  BOOST_TEST(!files->make("c"));
  BOOST_TEST(files->open() == 2u);
  const int closed = a->fd();
  a.reset();
  BOOST_TEST(files->open() == 1u);
  BOOST_TEST(::fcntl(closed, F_GETFD) == -1);  // closed with its last holder
  auto c = files->make("c");
  BOOST_REQUIRE(c);
  BOOST_TEST(read_all(c->fd()) == "c");
}

BOOST_AUTO_TEST_CASE(files_outlive_their_maker) {
  auto files = std::make_shared<BodyFiles>(1);
  auto file = files->make("kept");
  files.reset();
  BOOST_REQUIRE(file);
  BOOST_TEST(read_all(file->fd()) == "kept");
}

BOOST_AUTO_TEST_CASE(the_process_bound_leaves_most_descriptors_to_sockets) {
  const auto process = BodyFiles::for_process();
  BOOST_TEST(process == BodyFiles::for_process());
  rlimit limit{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  if (limit.rlim_cur != RLIM_INFINITY) {
    BOOST_TEST(process->max_open() == limit.rlim_cur / 4);
  } else {
    BOOST_TEST(process->max_open() > 0u);
  }
}

BOOST_AUTO_TEST_SUITE_END()  // body_file_test
