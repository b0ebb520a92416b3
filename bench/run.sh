#!/usr/bin/env bash
# The bench harness: bench/run.sh SCENARIO|all [options], bench/run.sh compare DIR_A DIR_B,
# bench/run.sh soak, bench/run.sh refresh-day. See bench/README.md; the logic is in bench/run.py
# and the modules of bench/harness/ (Python 3.11, standard library only).
exec python3 "$(dirname "${BASH_SOURCE[0]}")/run.py" "$@"
