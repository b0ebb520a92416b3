"""Background processes that are all stopped when the command ends: normally, on an error, on
Ctrl-C, SIGTERM or SIGHUP.

Each process gets its own process group, so that stopping it also reaches what it forked (nginx's
workers, Varnish's child) and a Ctrl-C at the terminal reaches only this program, which then stops
them in order.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

from .console import Interrupted


class Process:
    """A started process: its Popen, its name and the file its output goes to."""

    def __init__(self, name, popen, log_path):
        self.name = name
        self.popen = popen
        self.pid = popen.pid
        self.log_path = log_path

    def running(self):
        return self.popen.poll() is None

    def log_tail(self, chars=2000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-chars:]
        except OSError:
            return ""


def exit_status(returncode):
    """A shell's view of a return code: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class Processes:
    """The processes one command started, in a scratch folder (`work`) removed at the end."""

    def __init__(self, work):
        self.work = work
        self.started = []

    def start(self, name, argv, pin=None, log_path=None, stderr_to_log=True):
        """Starts ARGV (under taskset when PIN, a CPU list, is given), its output to LOG_PATH
        (default WORK/NAME.log, truncated first); stderr stays the terminal's unless
        STDERR_TO_LOG."""
        if pin:
            argv = ["taskset", "-c", pin, *argv]
        log_path = log_path or os.path.join(self.work, f"{name}.log")
        with open(log_path, "wb") as log_file:
            popen = subprocess.Popen(
                [str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT if stderr_to_log else None, start_new_session=True)
        process = Process(name, popen, log_path)
        self.started.append(process)
        return process

    def wait(self, process, timeout=None):
        """The exit status of PROCESS once it has ended (raises TimeoutExpired)."""
        status = exit_status(process.popen.wait(timeout=timeout))
        self._forget(process)
        return status

    def stop(self, process, grace=5.0):
        """SIGTERM, then after GRACE seconds SIGKILL to its whole group; returns its status."""
        if process.running():
            _signal_pid(process.pid, signal.SIGTERM)
            try:
                process.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        return self.kill(process)

    def kill(self, process):
        """SIGKILL to the process and its group (what it forked and left behind)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        status = exit_status(process.popen.wait())
        self._forget(process)
        return status

    def stop_all(self):
        for process in reversed(list(self.started)):
            self.stop(process, grace=5.0)

    def _forget(self, process):
        if process in self.started:
            self.started.remove(process)


def _signal_pid(pid, signum):
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _interrupt(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


@contextlib.contextmanager
def managed_processes(prefix):
    """A Processes whose scratch folder is removed and whose processes are all stopped when the
    block ends, however it ends; SIGTERM and SIGHUP end it as Ctrl-C does."""
    previous = {s: signal.signal(s, _interrupt)
                for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    work = tempfile.mkdtemp(prefix=f"{prefix}.")
    processes = Processes(work)
    try:
        yield processes
    finally:
        # A second Ctrl-C must not cut the cleanup short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            processes.stop_all()
            shutil.rmtree(work, ignore_errors=True)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def sleep_until(deadline):
    """Sleeps until time.monotonic() reaches DEADLINE (returns at once when it has)."""
    left = deadline - time.monotonic()
    if left > 0:
        time.sleep(left)
