"""What the reports say about the machine and the source: CPU, memory, OS, tool versions, the
commit measured."""

import os
import platform
import re
import subprocess

from . import ROOT


def _output(argv):
    try:
        result = subprocess.run(argv, capture_output=True, text=True)
    except OSError:
        return ""
    return result.stdout + result.stderr


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def memory_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1048576
    return 0.0


def os_name():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return ""


def kernel():
    return platform.release()


def load_average():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg writes them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def redis_version():
    match = re.search(r"v=(\S+)", _output(["redis-server", "--version"]))
    return match.group(1) if match else ""


def nginx_version():
    return _output(["nginx", "-v"]).strip().split(": ", 1)[-1]


def varnish_version():
    first_line = (_output(["varnishd", "-V"]).splitlines() or [""])[0]
    match = re.search(r"\((varnish-[0-9.]*)", first_line)
    return match.group(1) if match else ""


def source_revision():
    """The short commit, with "with uncommitted changes" when the tree (less the published
    figures) differs from it."""
    head = _git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return "unknown"
    diff = _git("diff", "--quiet", "HEAD", "--", ".", ":!bench/published", ":!bench/RESULTS.md")
    return head.stdout.strip() + ("" if diff.returncode == 0 else " with uncommitted changes")


def short_commit():
    head = _git("rev-parse", "--short", "HEAD")
    return head.stdout.strip() if head.returncode == 0 else "unknown"


def _git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    except OSError:
        return subprocess.CompletedProcess(args, 1, "", "")


def cpu_count():
    return os.cpu_count() or 1
