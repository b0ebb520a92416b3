# shellcheck shell=bash
# The bench scripts' binaries: the gateway, the stub and wg-bench, built in Release (the shipped
# build) unless told not to. The caller defines log() and die().

# release_binaries BUILD BUILD_DIR JOBS → prints the folder holding the three binaries.
# Tests stay as configured: build/ is also the test suite's first pass; only these are built.
release_binaries() {
  local build=$1 build_dir=$2 jobs=$3 b
  if ((build)); then
    log "building Release in $build_dir"
    cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build_dir" -j "$jobs" --target widget-gateway widget-upstream-stub wg-bench >&2
  fi
  for b in widget-gateway widget-upstream-stub wg-bench; do
    [[ -x $build_dir/bin/$b ]] || die "$build_dir/bin/$b is missing (build first or drop --no-build)"
  done
  echo "$build_dir/bin"
}
