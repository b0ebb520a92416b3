#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz, each for a bounded time on a scratch copy of its
# committed seed corpus, and prints what each did (executions, corpus size, peak memory).
# Exits non-zero when any target crashes, leaks, hits undefined behaviour or a failed invariant,
# times out on an input or exceeds the memory limits; the input that did it is kept next to
# the target's log.
#   tests/fuzz/run.sh [--seconds N] [--build-dir DIR] [--no-build] [TARGET...]
#     --seconds N      per target (default 600: the issue's 10 minutes)
#     --build-dir DIR  the fuzz tree (default build-clang-asan, the second pass of
#                      tests/run-all.sh: Clang Debug, ASan+UBSan, -DWG_FUZZ=ON); configured
#                      that way when it does not exist yet, and only the fuzz targets are built
#     --no-build       run the binaries already in DIR/tests
#     TARGET...        a subset of the targets in tests/fuzz/CMakeLists.txt (default: all)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=600
build=$root/build-clang-asan
do_build=1
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds=${2:?}; shift ;;
    --build-dir) build=$(realpath -m "${2:?}"); shift ;;
    --no-build) do_build=0 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: --seconds expects a number" >&2; exit 2; }
if ((${#targets[@]} == 0)); then
  # The one list of targets, in tests/fuzz/CMakeLists.txt.
  read -r -a targets < <(sed -n '/^set(WG_FUZZ_TARGETS/,/)/p' "$root/tests/fuzz/CMakeLists.txt" |
    tr '\n' ' ' | sed 's/^set(WG_FUZZ_TARGETS//; s/).*//')
fi

if ((do_build)); then
  if ! command -v clang++ >/dev/null; then
    echo "fuzz: clang++ not found; run deploy/install-deps.sh --test-tools" >&2
    exit 2
  fi
  if [[ ! -f $build/CMakeCache.txt ]]; then
    CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      -DWG_SANITIZE=ON -DWG_FUZZ=ON >/dev/null
  fi
  cmake --build "$build" -j "$(nproc)" --target wg_fuzz
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
binary=$build/tests/wg_fuzz
if [[ ! -x $binary ]]; then
  echo "fuzz: $binary is missing (is $build configured with -DWG_FUZZ=ON?)" >&2
  exit 1
fi
for target in "${targets[@]}"; do
  work=$build/fuzz-run/$target
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp "$root/tests/fuzz/corpus/$target/"* "$work/corpus/"
  echo "fuzz: $target for ${seconds}s"
  if (cd "$work" && WG_FUZZ_TARGET=$target "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -malloc_limit_mb=512 -print_final_stats=1 -artifact_prefix="$work/" corpus \
        >"$work/fuzz.log" 2>&1); then
    grep -E '^Done|stat::number_of_executed_units|stat::peak_rss_mb' "$work/fuzz.log" |
      sed "s/^/fuzz: $target: /"
    echo "fuzz: $target: corpus $(find "$work/corpus" -type f | wc -l) inputs"
  else
    failed+=("$target")
    echo "fuzz: $target FAILED; log $work/fuzz.log, reproducer(s):" >&2
    find "$work" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
      -o -name 'oom-*' -o -name 'slow-unit-*' \) >&2
    tail -n 60 "$work/fuzz.log" >&2
  fi
done

if ((${#failed[@]} > 0)); then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all targets passed"
