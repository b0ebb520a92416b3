#pragma once
// A cached body's bytes in an anonymous memory file (memfd), sealed so they can never change,
// for plain HTTP/1.x sessions to send with sendfile(2): the kernel then hands the file's pages
// to the socket instead of copying the body from user space on every answer (that copy was a
// third of a worker's CPU answering 150 KB pages). The file is a second copy of the body, made
// once per entry and charged to L1 with it (docs/listener.md, "Big bodies").
//
// File descriptors are the process's, so their number is bounded process-wide: past the bound
// make() gives nothing and answers are written from memory as before.
//
// Threads: make() and the destructor of a BodyFile may run on any thread (an atomic count).

#include <atomic>
#include <cstddef>
#include <memory>
#include <string_view>

namespace wg::cache {

// Bodies from this size on are worth a file: below it, copying costs about what sendfile's
// page handling does.
inline constexpr std::size_t kBodyFileMinBytes = 32 * 1024;

class BodyFiles;

class BodyFile {
 public:
  BodyFile(int fd, std::size_t size, std::shared_ptr<BodyFiles> owner);
  ~BodyFile();
  BodyFile(const BodyFile&) = delete;
  BodyFile& operator=(const BodyFile&) = delete;

  int fd() const { return fd_; }
  std::size_t size() const { return size_; }

 private:
  int fd_;
  std::size_t size_;
  std::shared_ptr<BodyFiles> owner_;  // counts this file open until it closes
};

// How many body files may be open at once, and their maker.
class BodyFiles : public std::enable_shared_from_this<BodyFiles> {
 public:
  explicit BodyFiles(std::size_t max_open);
  // The process's: a quarter of its soft RLIMIT_NOFILE, so that clients' sockets keep the rest.
  static std::shared_ptr<BodyFiles> for_process();

  // A sealed file holding `bytes`; null when `max_open` files are open already or the system
  // refused (no memfd, no descriptor left, no memory).
  std::shared_ptr<const BodyFile> make(std::string_view bytes);

  std::size_t open() const { return open_.load(std::memory_order_relaxed); }
  std::size_t max_open() const { return max_open_; }

 private:
  friend class BodyFile;
  std::size_t max_open_;
  std::atomic<std::size_t> open_{0};
};

}  // namespace wg::cache
