#include "process/control_plane.hpp"

#include <boost/asio/buffer.hpp>

#include <csignal>
#include <system_error>

#include "widget_gateway/common/log.hpp"

namespace wg::process {

namespace {

sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int signal : {SIGHUP, SIGINT, SIGTERM}) sigaddset(&signals, signal);
  return signals;
}

int open_signal_descriptor() {
  const sigset_t signals = stop_signals();
  const int fd = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
  return fd;
}

}  // namespace

// Blocked for good: a late signal (a SIGHUP sent just after SIGTERM) stays pending and ends
// with the process instead of killing it by its default action.
void block_stop_signals() {
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

ControlPlane::ControlPlane(boost::asio::io_context& control, Hooks hooks)
    : control_(control), hooks_(std::move(hooks)), signals_(control, open_signal_descriptor()) {}

ControlPlane::~ControlPlane() {
  end_reloads();
}

void ControlPlane::run() {
  wait_for_signal();
  control_.run();
  end_reloads();
}

// One read takes every signal pending (one of each kind at most); the next read is asked for
// after they are handled, so a storm of SIGHUPs shares the control thread with its timers.
void ControlPlane::wait_for_signal() {
  signals_.async_read_some(boost::asio::buffer(read_),
                           [this](const boost::system::error_code& ec, std::size_t bytes) {
                             if (ec) return;
                             for (std::size_t i = 0; i < bytes / sizeof(signalfd_siginfo); ++i) {
                               if (!take(static_cast<int>(read_[i].ssi_signo)))
                                 return;  // no read after the drain
                             }
                             wait_for_signal();
                           });
}

bool ControlPlane::take(int signal) {
  if (signal == SIGHUP) {
    reload();
    return true;
  }
  log::info("draining", {{"signal", signal}});
  refuse_reloads();
  hooks_.drain(signal);
  return false;
}

// The file is read and applied on a helper thread: no blocking I/O on an io thread. One
// helper at a time, so reloads apply in order: a SIGHUP while one runs only asks it to read
// the file once more when done, and the control thread never waits for it.
void ControlPlane::reload() {
  {
    std::lock_guard lock(mutex_);
    if (draining_) return;
    if (running_) {
      again_ = true;
      return;
    }
    running_ = true;
  }
  if (thread_.joinable()) thread_.join();  // finished: it cleared running_
  thread_ = std::jthread([this] {
    for (;;) {
      hooks_.reload();
      std::lock_guard lock(mutex_);
      if (!again_ || draining_) {
        running_ = false;
        return;
      }
      again_ = false;
    }
  });
}

// From the drain on, no reload starts (a pending one is dropped): it would only be applied to
// workers on their way out.
void ControlPlane::refuse_reloads() {
  std::lock_guard lock(mutex_);
  draining_ = true;
}

void ControlPlane::end_reloads() {
  refuse_reloads();
  if (thread_.joinable()) thread_.join();
}

}  // namespace wg::process
