#!/usr/bin/env bash
# CPU per derived page against CPU per stored page: the gateway's own CPU time (utime + stime
# from /proc) per request, for 20,000 requests of one page served from L1, then for ~20,000
# distinct pages each cut from cached windows (L1 holds the windows, not the pages), both on
# one keep-alive curl connection. Gateway on CPU 0, curl on CPU 1. Loopback port 7395 for Redis.
#   bench/derive-cost.sh        (BIN=DIR for another build; default build/bin)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${BIN:-$ROOT/build/bin}
W=$(mktemp -d)
PIDS=()
cleanup() {
  kill "${PIDS[@]}" 2>/dev/null || true
  redis-cli -p 7395 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
address() { grep "$2" "$1" | grep -o '"address":"[^"]*"' | head -1 | sed 's/.*://; s/"//'; }

redis-server --bind 127.0.0.1 --port 7395 --save '' --appendonly no --daemonize yes \
  --logfile "$W/redis.log"
"$B/widget-upstream-stub" --listen 127.0.0.1:0 --widgets 200 --seed 1 >"$W/stub.log" 2>&1 &
PIDS+=($!)
sleep 0.5
SP=$(address "$W/stub.log" address)
# A widget with at least 980 reviews: its pages below are all cut from windows 0..900.
ID=$(curl -s "http://127.0.0.1:$SP/__stub/widgets?limit=200" | python3 -c \
  'import json,sys; print([w["id"] for w in json.load(sys.stdin) if w["totalReviewAmount"]>=980][0])')
printf '[log]\naccess_log = "off"\n[cache]\nl1_max_bytes = "1GiB"\n' >"$W/gw.toml"
taskset -c 0 "$B/widget-gateway" --config "$W/gw.toml" --listen 127.0.0.1:0 \
  --admin-listen 127.0.0.1:0 --upstream "http://127.0.0.1:$SP" \
  --redis redis://127.0.0.1:7395/0 --threads 1 >"$W/gw.log" 2>&1 &
GP=$!
PIDS+=("$GP")
sleep 0.8
PORT=$(address "$W/gw.log" '"listener":"public"')
U="http://127.0.0.1:$PORT/api/v1/widgets/widget/$ID"
for s in 0 300 600 900; do curl -s -o /dev/null "$U/reviews/remote?limit=300&skip=$s"; done
curl -s -o /dev/null "$U/remote"
curl -s -o /dev/null "$U/reviews/remote?limit=20&skip=0"
for _ in $(seq 20000); do
  printf 'url = "%s"\noutput = /dev/null\n' "$U/reviews/remote?limit=20&skip=0"
done >"$W/same"
for l in $(seq 1 21); do
  for s in $(seq 0 959); do printf 'url = "%s"\noutput = /dev/null\n' "$U/reviews/remote?limit=$l&skip=$s"; done
done >"$W/cut"
cpu() { awk '{print $14 + $15}' "/proc/$GP/stat"; }
for phase in same cut; do
  a=$(cpu)
  taskset -c 1 curl -s --config "$W/$phase"
  b=$(cpu)
  n=$(grep -c '^url' "$W/$phase")
  ticks=$(getconf CLK_TCK)
  echo "$phase: $(((b - a) * 1000 / ticks)) ms CPU for $n requests = $(((b - a) * 1000000000 / ticks / n / 1000)) us/request"
done
