#!/usr/bin/env bash
# The hit path over HTTPS beside nginx (see bench/README.md): its logic is bench/harness/tls_h2.py.
#   bench/tls-h2.sh [--duration 8s] [--reps 3] [--out DIR] [--build-dir DIR] [--no-build]
exec python3 "$(dirname "${BASH_SOURCE[0]}")/run.py" tls-h2 "$@"
