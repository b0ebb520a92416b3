"""Makes bench/harness importable from the tests: `import harness_path` first."""

import os
import sys

BENCH_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench")
sys.path.insert(0, os.path.abspath(BENCH_DIR))
