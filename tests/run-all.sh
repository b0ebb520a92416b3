#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest; then builds it
# again with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan) and runs it there too.
#   tests/run-all.sh
# WG_SKIP_SANITIZERS=1 skips the second pass (a quicker local run; CI always does both).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
# Read here and kept from the suite: a gateway a test starts warns about WG_* variables it does
# not read, and some tests want no warning at all.
skip_sanitizers=${WG_SKIP_SANITIZERS:-0}
unset WG_SKIP_SANITIZERS

"$root/deploy/install-deps.sh" --test-tools

cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j "$jobs"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

if [[ $skip_sanitizers == 1 ]]; then exit 0; fi

# Debug (-O0): measured to build faster than RelWithDebInfo under the sanitizers, and the
# suite waits on sockets and processes far more than it computes.
cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWG_SANITIZE=ON \
  >/dev/null
cmake --build "$root/build-asan" -j "$jobs"
# Children started by the tests (gateway, stub) inherit these: a leak, an overflow or undefined
# behaviour anywhere aborts that process, and the test that started it fails.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs"
