#!/usr/bin/env bash
# The Prometheus rules in deploy/prometheus/ are valid (`promtool check rules`) and pass their
# unit tests (`promtool test rules`): every alert fires on the series fed to it and stays
# silent on a healthy fleet.
#   tests/deploy/check-prometheus-rules.sh ROOT
# promtool comes from Debian's prometheus package (deploy/install-deps.sh --test-tools); a
# missing promtool fails the test with that hint.
set -euo pipefail

if (($# != 1)); then
  echo "usage: $0 ROOT" >&2
  exit 2
fi
rules_dir=$1/deploy/prometheus

if ! command -v promtool >/dev/null 2>&1; then
  echo "FAIL: promtool is not installed: run deploy/install-deps.sh --test-tools" \
    "(package prometheus)" >&2
  exit 1
fi

shopt -s nullglob
rules=()
tests=()
for file in "$rules_dir"/*.yml; do
  if [[ $file == *.test.yml ]]; then tests+=("$file"); else rules+=("$file"); fi
done
if ((${#rules[@]} == 0 || ${#tests[@]} == 0)); then
  echo "FAIL: no rules or no rule tests under deploy/prometheus/" >&2
  exit 1
fi

promtool check rules "${rules[@]}"
# Rule files are named relative to the test file.
cd "$rules_dir"
promtool test rules "${tests[@]##*/}"
