#!/usr/bin/env bash
# Installs what is missing, builds, and runs widget-gateway locally in front of the stub
# upstream (demo data) with a private redis-server. Ctrl-C stops all three.
#   deploy/quickstart.sh [--port PORT]   (default 8080; admin on PORT+1010, stub on PORT+1)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
port=8080
while (($#)); do
  case "$1" in
    --port) port=$2; shift 2 ;;
    *) echo "usage: $0 [--port PORT]" >&2; exit 2 ;;
  esac
done
stub_port=$((port + 1))
admin_port=$((port + 1010))
redis_port=$((port + 1000 - 1))

"$root/deploy/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja >/dev/null
cmake --build "$root/build" --target widget-gateway widget-upstream-stub

run_dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run_dir"
}
trap cleanup EXIT INT TERM

redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$run_dir" --logfile "$run_dir/redis.log" &
pids+=($!)
"$root/build/bin/widget-upstream-stub" --listen "127.0.0.1:$stub_port" --widgets 100 --seed 1 \
  2>"$run_dir/stub.log" &
pids+=($!)

for _ in $(seq 50); do
  if grep -q '"event":"listening"' "$run_dir/stub.log" 2>/dev/null; then break; fi
  sleep 0.1
done
widget=$(curl -s "http://127.0.0.1:$stub_port/__stub/widgets?limit=1" | sed -E 's/.*"id":"([^"]+)".*/\1/')

"$root/build/bin/widget-gateway" --config "$root/conf/widget-gateway.toml" \
  --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin_port" \
  --upstream "http://127.0.0.1:$stub_port" --redis "redis://127.0.0.1:$redis_port/0" &
pids+=($!)

cat <<EOT

widget-gateway is running (Ctrl-C stops it, the stub and redis):
  widget data   http://127.0.0.1:$port/api/v1/widgets/widget/$widget/remote
  reviews       http://127.0.0.1:$port/api/v1/widgets/widget/$widget/reviews/remote?limit=20
  readiness     http://127.0.0.1:$port/readyz
  admin         http://127.0.0.1:$admin_port/readyz
  stub upstream http://127.0.0.1:$stub_port/__stub/stats   (upstream request counters)

EOT
wait "${pids[-1]}"
