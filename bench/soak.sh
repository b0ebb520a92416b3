#!/usr/bin/env bash
# The soak (bench/run.sh soak; see bench/README.md): its logic is bench/harness/soak.py.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/run.py" soak "$@"
