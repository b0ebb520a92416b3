"""What a process uses, read from /proc: peak and current RSS, CPU time, open files."""

import os


def children(pid):
    """The direct children of PID."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def peak_rss_kb(pid):
    """Peak RSS (VmHWM) of PID and its direct children (nginx's worker, Varnish's child)."""
    return sum(_status_kb(p, "VmHWM") for p in [pid, *children(pid)])


def rss_kb(pid):
    return _status_kb(pid, "VmRSS")


def tree_cpu_ticks(pid):
    """CPU time (user + system, clock ticks) used so far by PID and every process below it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # Fields 14 and 15, counted after the command name (which may hold spaces).
            fields = f.read().rsplit(")", 1)[1].split()
        total = int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        total = 0
    return total + sum(tree_cpu_ticks(child) for child in children(pid))


def clock_ticks():
    return os.sysconf("SC_CLK_TCK")


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def body_file_bytes(pid):
    """Bytes PID holds in the gateway's body files (memory files it sends big bodies from with
    sendfile): memory that L1 charges but RSS does not show."""
    total = 0
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return 0
    for fd in fds:
        path = os.path.join(fd_dir, fd)
        try:
            if os.readlink(path).startswith("/memfd:wg-body"):
                total += os.stat(path).st_size
        except OSError:
            pass
    return total
