#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, ASan and UBSan (a separate build dir;
# the regular build is untouched) and runs each target for a bounded time on a scratch copy of
# its committed seed corpus. Exits non-zero when any target crashes, leaks, hits undefined
# behaviour, times out on an input or exceeds the memory limits; the input that did it is
# kept next to the target's log.
#   tests/fuzz/run.sh [seconds-per-target]          (default 60)
# Environment: WG_FUZZ_BUILD_DIR (default build-fuzz-clang), WG_FUZZ_TARGETS (space-separated
# subset of: route_query cache_entry upstream_body retry_after forwarded_for accept_encoding
# if_none_match cors_request config_value config_toml lease_file).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-60}
build=${WG_FUZZ_BUILD_DIR:-$root/build-fuzz-clang}
targets=${WG_FUZZ_TARGETS:-route_query cache_entry upstream_body retry_after forwarded_for \
  accept_encoding if_none_match cors_request config_value config_toml lease_file}

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found; run deploy/install-deps.sh --test-tools" >&2
  exit 2
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWG_FUZZ=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target wg_fuzz_targets

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for target in $targets; do
  work=$build/fuzz-run/$target
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp "$root/tests/fuzz/corpus/$target/"* "$work/corpus/"
  echo "fuzz: $target for ${seconds}s"
  if (cd "$work" && "$build/tests/fuzz_$target" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
        -artifact_prefix="$work/" corpus >"$work/fuzz.log" 2>&1); then
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
