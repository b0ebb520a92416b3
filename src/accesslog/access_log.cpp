#include "widget_gateway/accesslog/access_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>
#include <system_error>

#include "widget_gateway/common/log.hpp"

namespace wg::accesslog {

namespace {

// Typical lines are 200-300 bytes; the byte bound keeps a burst of long lines (long client or
// widget fields) within the same memory as the line bound suggests.
constexpr std::size_t kBytesPerQueuedLine = 512;

double clamp_sample(double sample) {
  if (std::isnan(sample)) return 1.0;
  return std::clamp(sample, 0.0, 1.0);
}

}  // namespace

AccessLog::AccessLog(std::string destination, double sample, RandomSource& random,
                     std::size_t max_queued_lines)
    : path_(std::move(destination)),
      kind_(path_ == "off"      ? Kind::off
            : path_ == "stdout" ? Kind::stdout_
                                : Kind::file),
      random_(random),
      max_lines_(std::max<std::size_t>(max_queued_lines, 1)),
      max_bytes_(max_lines_ * kBytesPerQueuedLine),
      sample_(sample) {
  if (!(sample >= 0.0 && sample <= 1.0)) {
    throw std::invalid_argument("access log sample must be between 0 and 1");
  }
  if (path_.empty()) throw std::invalid_argument("access log destination is empty");
  if (kind_ == Kind::off) return;
  if (kind_ == Kind::stdout_) {
    fd_ = STDOUT_FILENO;
  } else {
    open_file();
    if (fd_ < 0) {
      throw std::system_error(errno, std::generic_category(), "cannot open access log " + path_);
    }
  }
  writer_ = std::thread([this] { run(); });
}

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
  if (kind_ == Kind::file && fd_ >= 0) ::close(fd_);
}

void AccessLog::write(const Record& record) {
  if (kind_ == Kind::off) return;
  const double sample = sample_.load(std::memory_order_relaxed);
  if (sample <= 0.0) return;
  if (sample < 1.0 && !(random_.uniform01() < sample)) return;

  // Formatted outside the lock into a per-thread buffer that keeps its capacity.
  thread_local std::string line;
  line.clear();
  if (sample < 1.0) {
    Record sampled = record;
    sampled.sample = sample;
    append_line(line, sampled);
  } else {
    append_line(line, record);
  }

  bool was_empty = false;
  {
    std::lock_guard lock(mutex_);
    if (queued_lines_ >= max_lines_ || queue_.size() + line.size() > max_bytes_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    was_empty = queue_.empty();
    queue_ += line;
    ++queued_lines_;
    ++enqueued_;
  }
  if (was_empty) wake_.notify_one();
}

void AccessLog::set_sample(double sample) {
  sample_.store(clamp_sample(sample), std::memory_order_relaxed);
}

void AccessLog::reopen() {
  if (kind_ != Kind::file) return;
  {
    std::lock_guard lock(mutex_);
    // Lines queued so far belong to the old file; a second request before the writer got to
    // the first keeps the first boundary.
    if (!reopen_requested_) reopen_offset_ = queue_.size();
    reopen_requested_ = true;
  }
  wake_.notify_one();
}

void AccessLog::flush() {
  if (kind_ == Kind::off) return;
  std::unique_lock lock(mutex_);
  const std::uint64_t target = enqueued_;
  const bool reopen_pending = reopen_requested_;
  wake_.notify_one();
  written_.wait(lock, [&] { return done_ >= target && (!reopen_pending || !reopen_requested_); });
}

void AccessLog::run() {
  std::string batch;
  for (;;) {
    std::size_t lines = 0;
    bool reopen = false;
    std::size_t reopen_offset = 0;
    bool stop = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || reopen_requested_; });
      batch.clear();
      batch.swap(queue_);
      lines = queued_lines_;
      queued_lines_ = 0;
      reopen = reopen_requested_;
      reopen_offset = reopen_offset_;
      stop = stopping_ && batch.empty() && !reopen;
    }
    if (stop) return;

    // Lines before the reopen boundary go to the old file, the rest to the new one.
    bool ok = true;
    if (reopen) {
      ok = write_all(std::string_view(batch).substr(0, reopen_offset));
      open_file();
      ok = write_all(std::string_view(batch).substr(reopen_offset)) && ok;
    } else {
      ok = write_all(batch);
    }
    if (!ok && lines > 0) dropped_.fetch_add(lines, std::memory_order_relaxed);

    {
      std::lock_guard lock(mutex_);
      done_ += lines;
      if (reopen) {
        reopen_requested_ = false;
        reopen_offset_ = 0;
      }
    }
    written_.notify_all();
  }
}

void AccessLog::open_file() {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (fd_ >= 0) {
      log::warn("access_log_reopen_failed", {{"path", path_}, {"errno", errno}});
    }
    return;  // keep writing to the old file, if any
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

bool AccessLog::write_all(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!write_failing_) {
        write_failing_ = true;
        log::warn("access_log_write_failed", {{"destination", path_}, {"errno", errno}});
      }
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  write_failing_ = false;
  return true;
}

}  // namespace wg::accesslog
