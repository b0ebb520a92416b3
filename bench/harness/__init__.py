"""The bench harness: bench/run.sh's logic, in modules with one job each (see bench/README.md).

Python 3.11 standard library only. Every server it starts listens on 127.0.0.1 and is stopped
when the command ends, however it ends.
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_DIR = os.path.join(ROOT, "bench")
RESULTS_ROOT = os.path.join(BENCH_DIR, "results")
SCENARIO_DIR = os.path.join(BENCH_DIR, "scenarios")
