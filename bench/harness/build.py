"""The binaries the bench scripts run, built in Release unless told not to, and the system tools
they need."""

import os
import shutil
import subprocess
import sys

from . import ROOT
from .console import Failure

BINARIES = ("widget-gateway", "widget-upstream-stub", "wg-bench")
SYSTEM_BIN_DIRS = ("/usr/sbin", "/sbin")


def release_binaries(build, build_dir, jobs, log):
    """The folder holding the gateway, the stub and wg-bench. Only these three are built: the
    tests stay as configured (build/ is also the test suite's first pass)."""
    if build:
        log(f"building Release in {build_dir}")
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build_dir, "-j", str(jobs), "--target", *BINARIES],
                       check=True, stdout=sys.stderr)
    bin_dir = os.path.join(build_dir, "bin")
    for name in BINARIES:
        if not os.access(os.path.join(bin_dir, name), os.X_OK):
            raise Failure(f"{bin_dir}/{name} is missing (build first or drop --no-build)")
    return bin_dir


def have_tool(name):
    return shutil.which(name) is not None or any(
        os.access(os.path.join(d, name), os.X_OK) for d in SYSTEM_BIN_DIRS)


def add_system_bin_dirs_to_path():
    """nginx and varnishd live in /usr/sbin, which a user's PATH may lack."""
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), *SYSTEM_BIN_DIRS])


def missing_tools(tools):
    return [t for t in tools if not have_tool(t)]


def install_bench_tools(log, missing):
    log(f"installing missing tools ({' '.join(missing)}) with deploy/install-deps.sh --bench-tools")
    subprocess.run([os.path.join(ROOT, "deploy", "install-deps.sh"), "--bench-tools"], check=True)
