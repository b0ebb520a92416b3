#!/usr/bin/env bash
# Installs what is missing, then builds and runs the whole test suite twice (what CI runs):
#   pass 1, build/: GCC Release, the build that ships (the Dockerfile and bench/run.sh build the
#     same configuration; bench/run.sh reuses this directory);
#   pass 2, build-clang-asan/: Clang Debug with AddressSanitizer + UndefinedBehaviorSanitizer,
#     the suite again (the tests of the test tools and deploy files, and the soak, aside), plus
#     the libFuzzer targets of tests/fuzz and a short smoke run of each. It builds the libraries,
#     the executables, the in-process test programs and the fuzz targets; pass 1's driver
#     programs (integration, hostile, bench) drive its sanitized executables (docs/ci.md, "Two
#     passes"). Its build runs beside pass 1's tests, at the lowest CPU priority: those tests
#     mostly wait on sockets and child processes, and leave a core idle.
#   tests/run-all.sh
# Both builds go through ccache when it is installed (deploy/install-deps.sh installs it): a
# machine that keeps its cache directory ($CCACHE_DIR, or ccache's default under the home
# directory) between runs rebuilds only what changed, whichever clone it runs in.
# WG_SKIP_SANITIZERS=1 skips the second pass (a quicker local run; CI always does both).
#   tests/run-all.sh --quick
# The short local loop: pass 1's tree only (build/, rebuilt incrementally), the tests not
# labelled "slow" (no soak, browser, CDN, Prometheus, Redis cluster or sentinels), no fuzzing.
# Minutes on a 2-core machine once build/ exists (docs/ci.md).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
# Tests run two per core: most of their time they wait on sockets, timers and child processes
# (a pass at two at a time kept the CPU under 40 % busy), and they assert no timing.
test_jobs=$((2 * jobs))
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

launcher=()
if command -v ccache >/dev/null 2>&1; then
  # Paths inside the checkout hash the same from any clone; the precompiled headers need the
  # sloppiness to be cached at all. Depend mode: a miss hashes the headers the compiler listed
  # (-MD) instead of running the preprocessor first. The inode cache hashes each precompiled
  # header (up to 366 MB) once, not once for every file that includes it: that was most of what
  # a cold cache cost (docs/ci.md, "How long").
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1 CCACHE_DEPEND=1 CCACHE_INODECACHE=1
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# cache_counts: "hits misses" of the compile cache so far (nothing without ccache).
cache_counts() {
  if ((${#launcher[@]})); then
    ccache --print-stats 2>/dev/null | awk -F'\t' '
      $1 ~ /^(direct|preprocessed)_cache_hit$/ { hits += $2 }
      $1 == "cache_miss" { misses += $2 }
      END { print hits + 0, misses + 0 }'
  fi
}
cache_before=$(cache_counts)

# Tells how the compile cache did over the run (in CI's log: whether the machine kept it).
cache_report() {
  if [[ -n $cache_before ]]; then
    local hits0 misses0 hits1 misses1
    read -r hits0 misses0 <<<"$cache_before"
    read -r hits1 misses1 <<<"$(cache_counts)"
    echo "run-all: compile cache: $((hits1 - hits0)) hits, $((misses1 - misses0)) misses"
  fi
}

if ((quick)); then
  started=$SECONDS
  CXX=${CXX:-g++} cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "${launcher[@]}" >/dev/null
  cmake --build "$root/build" -j "$jobs"
  built=$SECONDS
  ctest --test-dir "$root/build" --output-on-failure -j "$test_jobs" -LE slow
  cache_report
  echo "run-all: quick: build $((built - started)) s, tests $((SECONDS - built)) s"
  exit 0
fi

# Each pass is one compiler: a new tree is configured with it (CXX), and an existing one must
# have been (CMake keeps a tree's compiler; naming it again would make CMake start the tree over
# whenever it was spelt differently, e.g. c++ for g++).
# build_tree DIR CXX COMPILER_ID CMAKE_ARGUMENTS...
build_tree() {
  local dir=$1 cxx=$2 compiler_id=$3
  shift 3
  CXX=$cxx cmake -S "$root" -B "$dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
  local configured
  configured=$(sed -n 's/^set(CMAKE_CXX_COMPILER_ID "\(.*\)")$/\1/p' \
    "$dir"/CMakeFiles/*/CMakeCXXCompiler.cmake | head -n 1)
  if [[ $configured != "$compiler_id" ]]; then
    echo "run-all: $dir was configured with $configured, not $compiler_id: remove it" >&2
    return 1
  fi
  cmake --build "$dir" -j "$jobs"
}

# run_tests DIR CTEST_ARGUMENTS...
run_tests() {
  local dir=$1
  shift
  ctest --test-dir "$dir" --output-on-failure -j "$test_jobs" "$@"
}

pass1=$root/build
pass2=$root/build-clang-asan
started=$SECONDS
build_tree "$pass1" g++ GNU -DCMAKE_BUILD_TYPE=Release
built=$SECONDS

if [[ $skip_sanitizers == 1 ]]; then
  run_tests "$pass1"
  cache_report
  echo "run-all: pass 1 (GCC Release): build $((built - started)) s, tests $((SECONDS - built)) s"
  exit 0
fi

# Pass 2's build starts now, beside pass 1's tests, at the lowest CPU priority (nice 19): the
# tests keep the CPU whenever they want it, and the build takes what they leave. Its output goes
# to a log, printed when it is done. A run that stops early stops the build too.
pass2_log=$(mktemp)
set -m # the build in a process group of its own, which the trap can stop whole
(
  renice -n 19 -p "$BASHPID" >/dev/null
  began=$SECONDS
  # Debug (-O0): it builds faster than an optimised build under the sanitizers (-O1 took this
  # pass's build from about 360 s to 555 s: docs/ci.md, "How long"). Line tables only: what a
  # sanitizer's report needs (functions, files and lines), for less to compile and link than
  # full debug information. No precompiled headers: Clang writes the build folder's path into
  # them, so every file compiled against one missed the compile cache in a clone in another
  # folder (CI's case); without them a kept cache serves the whole pass from any folder.
  build_tree "$pass2" clang++ Clang -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -DWG_SANITIZE=ON -DWG_FUZZ=ON \
    -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DWG_TEST_DRIVERS_FROM="$pass1"
  echo "run-all: pass 2's build took $((SECONDS - began)) s, beside pass 1's tests at first"
) >"$pass2_log" 2>&1 &
pass2_build=$!
set +m
# The build has usually ended by then: kill's failure must not become the run's exit status
# (under set -e a failing command in the trap ends the shell with it).
trap 'kill -- -$pass2_build 2>/dev/null || true; rm -f "$pass2_log"' EXIT

run_tests "$pass1" # a failure ends the run here, and the trap stops pass 2's build
echo "run-all: pass 1 (GCC Release): build $((built - started)) s, tests $((SECONDS - built)) s"
tested=$SECONDS
pass2_built=0
wait $pass2_build || pass2_built=$?
cat "$pass2_log"
echo "run-all: pass 2's build ended $((SECONDS - tested)) s after pass 1's tests"
if ((pass2_built)); then exit "$pass2_built"; fi

# Children started by the tests (gateway, stub) inherit the options: a leak, an overflow or
# undefined behaviour anywhere aborts that process, and the test that started it fails.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
started=$SECONDS
run_tests "$pass2" -LE "tools|release_only"
echo "run-all: pass 2 (Clang Debug, ASan+UBSan, fuzz smoke): tests $((SECONDS - started)) s"
cache_report
echo "run-all: both passes in $SECONDS s"
