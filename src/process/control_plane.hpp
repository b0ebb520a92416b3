#pragma once
// The control thread's signals: SIGHUP reloads the configuration on a helper thread, one reload
// at a time; SIGTERM/SIGINT start the drain, after which no reload starts. run() is the control
// thread's loop. What a reload changes and what the drain stops are the owner's (hooks).
// The signals stay blocked in every thread and are read from a signalfd on the control thread:
// pending signals of one kind coalesce, so a storm of them costs one read per wake-up, and
// after the drain they stay pending until the process ends (Asio's signal_set reads its pipe
// until it is empty, which a storm keeps it from being: the drain waited for the storm to end).
// See docs/threading.md.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <sys/signalfd.h>

#include <array>
#include <functional>
#include <mutex>
#include <thread>

namespace wg::process {

// Blocks SIGHUP, SIGINT and SIGTERM for the calling thread and the threads it starts
// afterwards; called before any thread starts, so that no thread takes them by their default
// action and the control plane reads them.
void block_stop_signals();

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

  // Runs the control thread, reading the signals, until its io_context stops (the drain's end);
  // then waits for a reload still running, so that none outlives the workers it applies to.
  void run();

 private:
  void wait_for_signal();
  // Takes one signal read from the descriptor; false once the drain has begun.
  bool take(int signal);
  void reload();
  void refuse_reloads();
  void end_reloads();

  boost::asio::io_context& control_;
  Hooks hooks_;
  boost::asio::posix::stream_descriptor signals_;  // the signalfd
  std::array<signalfd_siginfo, 4> read_{};         // room for every kind taken, at once
  // The SIGHUP helper: the control thread starts and joins it.
  std::mutex mutex_;
  bool running_ = false;   // mutex_
  bool again_ = false;     // mutex_: a SIGHUP came while it ran
  bool draining_ = false;  // mutex_: no reload starts any more
  std::jthread thread_;    // last: destroyed (joined) first
};

}  // namespace wg::process
