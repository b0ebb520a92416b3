#include "process/control_plane.hpp"

#include <csignal>

#include "widget_gateway/common/log.hpp"

namespace wg::process {

// Before the signal set listens and after it, the signals stay pending: a late one (a SIGHUP
// sent just after SIGTERM) ends with the process instead of killing it by its default action,
// which the signal set restores when it goes.
void block_stop_signals(bool blocked) {
  sigset_t signals;
  sigemptyset(&signals);
  for (int signal : {SIGHUP, SIGINT, SIGTERM}) sigaddset(&signals, signal);
  pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &signals, nullptr);
}

ControlPlane::ControlPlane(boost::asio::io_context& control, Hooks hooks)
    : control_(control), hooks_(std::move(hooks)), signals_(control, SIGINT, SIGTERM, SIGHUP) {}

ControlPlane::~ControlPlane() {
  end_reloads();
}

void ControlPlane::run() {
  wait_for_signal();
  block_stop_signals(false);
  control_.run();
  block_stop_signals(true);
  end_reloads();
}

void ControlPlane::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal == SIGHUP) {
      reload();
      wait_for_signal();
      return;
    }
    log::info("draining", {{"signal", signal}});
    refuse_reloads();
    hooks_.drain(signal);
  });
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
    block_stop_signals(true);  // started by the control thread, which takes them
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
