#include "widget_gateway/cache/body_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace wg::cache {
namespace {

// Writes all of `bytes` to `fd`; false on any failure (a memory file fails only for want of
// memory).
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// With no limit on descriptors: still a bound, as every resource has one.
constexpr std::size_t kUnlimitedBound = 65536;

}  // namespace

BodyFile::BodyFile(int fd, std::size_t size, std::shared_ptr<BodyFiles> owner)
    : fd_(fd), size_(size), owner_(std::move(owner)) {}

BodyFile::~BodyFile() {
  ::close(fd_);
  owner_->open_.fetch_sub(1, std::memory_order_relaxed);
}

BodyFiles::BodyFiles(std::size_t max_open) : max_open_(max_open) {}

std::shared_ptr<BodyFiles> BodyFiles::for_process() {
  static const std::shared_ptr<BodyFiles> files = [] {
    rlimit limit{};
    std::size_t max_open = 0;
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      max_open = limit.rlim_cur == RLIM_INFINITY ? kUnlimitedBound
                                                 : static_cast<std::size_t>(limit.rlim_cur) / 4;
    }
    return std::make_shared<BodyFiles>(max_open);
  }();
  return files;
}

std::shared_ptr<const BodyFile> BodyFiles::make(std::string_view bytes) {
  // Counted before the descriptor exists, so that racing makers never pass the bound together.
  if (open_.fetch_add(1, std::memory_order_relaxed) >= max_open_) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  const int fd = ::memfd_create("wg-body", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  // Sealed: no write, resize or further seal can change what answers in flight are sending.
  if (!write_all(fd, bytes) ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    ::close(fd);
    open_.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  return std::make_shared<const BodyFile>(fd, bytes.size(), shared_from_this());
}

}  // namespace wg::cache
