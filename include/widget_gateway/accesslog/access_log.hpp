#pragma once
// The per-request access log sink. write() formats the line on the calling thread and appends
// it to a bounded in-memory queue (dropping and counting when full); one background thread
// writes the queue out in batches. An io thread therefore never waits on the disk or on a
// slow stdout reader, only on a short critical section that copies the line.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "widget_gateway/accesslog/record.hpp"
#include "widget_gateway/common/random.hpp"

namespace wg::accesslog {

class AccessLog {
 public:
  // `destination`: "stdout", "off", or a file path opened for append (created if missing).
  // `sample`: share of requests logged, 0..1. `random` must outlive the AccessLog.
  // Throws std::invalid_argument for a bad sample and std::system_error when the file cannot be
  // opened: both are start-up failures.
  AccessLog(std::string destination, double sample, RandomSource& random,
            std::size_t max_queued_lines = 65536);
  // Writes out everything queued, then stops the writer thread.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // Thread-safe and non-blocking (beyond copying the line under a mutex). The record's
  // strings are only read during the call.
  void write(const Record& record);

  // Takes effect for the next write(); clamped to 0..1 (config reload validates it first).
  void set_sample(double sample);
  // Reopens a file destination (after the file was rotated away), on the writer thread,
  // after the lines queued so far have been written. No-op for stdout and off.
  void reopen();
  // Blocks until every line queued before the call has been written (or dropped). For
  // shutdown paths and tests; never call it on an io thread.
  void flush();

  // Lines dropped because the queue was full or the write failed.
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  bool enabled() const { return kind_ != Kind::off; }

 private:
  enum class Kind : std::uint8_t { off, stdout_, file };

  void run();
  void open_file();  // opens path_ into fd_, closing the previous one on success
  bool write_all(std::string_view data);

  const std::string path_;
  const Kind kind_;
  RandomSource& random_;
  const std::size_t max_lines_;
  const std::size_t max_bytes_;
  std::atomic<double> sample_;
  std::atomic<std::uint64_t> dropped_{0};
  int fd_ = -1;  // owned by the writer thread once it runs
  bool write_failing_ = false;

  std::mutex mutex_;
  std::condition_variable wake_;     // writer: work or stop
  std::condition_variable written_;  // flush(): progress
  std::string queue_;                // complete lines, newline-terminated
  std::size_t queued_lines_ = 0;
  std::uint64_t enqueued_ = 0;  // lines accepted, ever
  std::uint64_t done_ = 0;      // lines written or lost to a write error, ever
  bool reopen_requested_ = false;
  std::size_t reopen_offset_ = 0;  // bytes of queue_ that belong to the old file
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace wg::accesslog
