#pragma once
// The control thread's signals: SIGHUP reloads the configuration on a helper thread, one reload
// at a time; SIGTERM/SIGINT start the drain, after which no reload starts. run() is the control
// thread's loop. What a reload changes and what the drain stops are the owner's (hooks).
// See docs/threading.md.

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <functional>
#include <mutex>
#include <thread>

namespace wg::process {

// Blocks (or unblocks) SIGHUP, SIGINT and SIGTERM for the calling thread and the threads it
// starts afterwards: only the control thread takes them, while run() listens.
void block_stop_signals(bool blocked);

class ControlPlane {
 public:
  struct Hooks {
    std::function<void()> reload;           // on the reload thread: read the file, apply it
    std::function<void(int signal)> drain;  // on the control thread, once
  };
  ControlPlane(boost::asio::io_context& control, Hooks hooks);
  // Joins a reload still running (should run() have thrown).
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Runs the control thread, taking the signals, until its io_context stops (the drain's end);
  // then waits for a reload still running, so that none outlives the workers it applies to.
  void run();

 private:
  void wait_for_signal();
  void reload();
  void refuse_reloads();
  void end_reloads();

  boost::asio::io_context& control_;
  Hooks hooks_;
  boost::asio::signal_set signals_;
  // The SIGHUP helper: the control thread starts and joins it.
  std::mutex mutex_;
  bool running_ = false;   // mutex_
  bool again_ = false;     // mutex_: a SIGHUP came while it ran
  bool draining_ = false;  // mutex_: no reload starts any more
  std::jthread thread_;    // last: destroyed (joined) first
};

}  // namespace wg::process
