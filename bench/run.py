#!/usr/bin/env python3
"""bench/run.sh's command line (see bench/README.md):

  bench/run.sh SCENARIO|all [options]          the bench runs (harness.bench_run)
  bench/run.sh compare DIR_A DIR_B [options]   two runs' figures side by side (harness.compare)
  bench/run.sh soak [options]                  the long run under faults (harness.soak)
  bench/run.sh refresh-day [options]           the daily refresh boundary (refresh-day.py)
  bench/tls-h2.sh [options]                    the hit path over TLS (harness.tls_h2)

Exit status: 0 done (compare: no regression); 1 a run failed (compare: a regression); 2 usage
error; 5 only --fail-if thresholds were crossed; 130 interrupted.
"""

import os
import subprocess
import sys

from harness import bench_run, compare
from harness.console import Failure, Interrupted, Logger, UsageError
from harness.options import USAGE, HelpRequested, parse_run_options

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))


def run_bench(argv):
    try:
        opts = parse_run_options(argv)
    except HelpRequested:
        sys.stdout.write(USAGE)
        return 0
    except UsageError:
        sys.stderr.write(USAGE)
        raise
    return bench_run.Run(opts).execute()


def run_compare(argv):
    if any(arg in ("-h", "--help") for arg in argv):
        sys.stdout.write(USAGE)
        return 0
    return compare.main(argv)


def main(argv):
    command = argv[0] if argv else ""
    if command == "refresh-day":
        os.execv(sys.executable, [sys.executable, os.path.join(BENCH_DIR, "refresh-day.py"),
                                  *argv[1:]])
    log = Logger("run.sh")
    try:
        if command == "compare":
            return run_compare(argv[1:])
        if command == "soak":
            from harness import soak
            return soak.main(argv[1:])
        if command == "tls-h2":
            from harness import tls_h2
            return tls_h2.main(argv[1:])
        return run_bench(argv)
    except UsageError as error:
        log(f"error: {error}")
        return 2
    except (Failure, subprocess.CalledProcessError, OSError) as error:
        log(f"error: {error}")
        return 1
    except (Interrupted, KeyboardInterrupt):
        log("interrupted: every process started was stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
