#!/usr/bin/env bash
# The three request-head readers side by side (bench/head-parsers/head_parsers.cpp): the
# gateway's own scanner, Beast's parser (server.http1_parser = "beast") and Debian's
# libhttp-parser, on the same three heads (wg-bench's, curl's, a browser's through a CDN).
#   bench/head-parsers.sh [--build-dir DIR] [--no-build]
# Prints, per reader, the instructions per head (callgrind, counted inside the reading loop
# only) and heads per second (the median of three runs; one core, in-process, no I/O).
# Needs libhttp-parser-dev and valgrind (deploy/install-deps.sh --bench-tools).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build"
BUILD=1
while (($#)); do
  case "$1" in
    --build-dir) BUILD_DIR=${2:?}; shift ;;
    --no-build) BUILD=0 ;;
    -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if ((BUILD)); then
  cmake -S "$ROOT" -B "$BUILD_DIR" >/dev/null
  cmake --build "$BUILD_DIR" --target wg-head-parsers >/dev/null
fi
BIN="$BUILD_DIR/bin/wg-head-parsers"
[[ -x $BIN ]] || { echo "no $BIN: is libhttp-parser-dev installed?" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

printf '%-12s %22s %16s\n' reader "instructions per head" "heads per second"
for reader in scanner beast http_parser; do
  valgrind --tool=callgrind --callgrind-out-file="$WORK/$reader.out" \
    --toggle-collect='*read_heads*' "$BIN" "$reader" 20000 >"$WORK/$reader.txt" 2>"$WORK/$reader.err"
  heads=$(sed -n 's/.*heads=\([0-9]*\).*/\1/p' "$WORK/$reader.txt")
  collected=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/$reader.err")
  rates=()
  for _ in 1 2 3; do
    rates+=("$("$BIN" "$reader" 300000 | sed -n 's/.*heads_per_second=\([0-9]*\).*/\1/p')")
  done
  median=$(printf '%s\n' "${rates[@]}" | sort -n | sed -n 2p)
  printf '%-12s %22d %16d\n' "$reader" $((collected / heads)) "$median"
done
