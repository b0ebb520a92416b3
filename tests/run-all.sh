#!/usr/bin/env bash
# Installs what is missing, then builds and runs the whole test suite twice (what CI runs):
#   pass 1, build/: GCC Release, the build that ships (the Dockerfile and bench/run.sh build the
#     same configuration; bench/run.sh reuses this directory);
#   pass 2, build-clang-asan/: Clang Debug with AddressSanitizer + UndefinedBehaviorSanitizer,
#     the suite again (the tests of the test tools and deploy files aside), plus the libFuzzer
#     targets of tests/fuzz and a 10-second smoke run of each. It builds the libraries, the
#     executables, the in-process test programs and the fuzz targets; pass 1's driver programs
#     (integration, hostile, bench) drive its sanitized executables (docs/ci.md, "Two passes").
#   tests/run-all.sh
# WG_SKIP_SANITIZERS=1 skips the second pass (a quicker local run; CI always does both).
#   tests/run-all.sh --quick
# The short local loop: pass 1's tree only (build/, rebuilt incrementally, through ccache when
# installed), the tests not labelled "slow" (no soak, browser, CDN, Prometheus, Redis cluster
# or sentinels), no fuzzing. Minutes on a 2-core machine once build/ exists (docs/ci.md).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
# Read here and kept from the suite: a gateway a test starts warns about WG_* variables it does
# not read, and some tests want no warning at all.
skip_sanitizers=${WG_SKIP_SANITIZERS:-0}
unset WG_SKIP_SANITIZERS
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "run-all: unknown option $1 (--quick, or nothing for both passes)" >&2; exit 2 ;;
esac

"$root/deploy/install-deps.sh" --test-tools

if ((quick)); then
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    # Paths inside the checkout hash the same from any clone; the precompiled headers need the
    # sloppiness to be cached at all.
    export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
    export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  started=$SECONDS
  CXX=${CXX:-g++} cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "${launcher[@]}" >/dev/null
  cmake --build "$root/build" -j "$jobs"
  built=$SECONDS
  ctest --test-dir "$root/build" --output-on-failure -j "$jobs" -LE slow
  echo "run-all: quick: build $((built - started)) s, tests $((SECONDS - built)) s"
  exit 0
fi

# Each pass is one compiler: a new tree is configured with it (CXX), and an existing one must
# have been (CMake keeps a tree's compiler; naming it again would make CMake start the tree over
# whenever it was spelt differently, e.g. c++ for g++).
# pass NAME DIR CXX COMPILER_ID "CTEST ARGUMENTS" CMAKE_ARGUMENTS...
pass() {
  local name=$1 dir=$2 cxx=$3 compiler_id=$4
  local -a ctest_args
  read -r -a ctest_args <<<"$5"
  shift 5
  local started=$SECONDS
  CXX=$cxx cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
  local configured
  configured=$(sed -n 's/^set(CMAKE_CXX_COMPILER_ID "\(.*\)")$/\1/p' \
    "$dir"/CMakeFiles/*/CMakeCXXCompiler.cmake | head -n 1)
  if [[ $configured != "$compiler_id" ]]; then
    echo "run-all: $dir was configured with $configured, not $compiler_id: remove it" >&2
    exit 1
  fi
  cmake --build "$dir" -j "$jobs"
  local built=$SECONDS
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${ctest_args[@]}"
  echo "run-all: $name: build $((built - started)) s, tests $((SECONDS - built)) s"
}

pass "pass 1 (GCC Release)" "$root/build" g++ GNU "" -DCMAKE_BUILD_TYPE=Release

if [[ $skip_sanitizers == 1 ]]; then exit 0; fi

# Debug (-O0): it builds faster than an optimised build under the sanitizers (-O1 took this
# pass's build from about 360 s to 555 s: docs/ci.md, "How long"). Children started by the
# tests (gateway, stub) inherit the options: a leak, an overflow or undefined behaviour
# anywhere aborts that process, and the test that started it fails.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
pass "pass 2 (Clang Debug, ASan+UBSan, fuzz smoke)" "$root/build-clang-asan" clang++ Clang \
  "-LE tools" -DCMAKE_BUILD_TYPE=Debug -DWG_SANITIZE=ON -DWG_FUZZ=ON \
  -DWG_TEST_DRIVERS_FROM="$root/build"
echo "run-all: both passes in $SECONDS s"
