#!/usr/bin/env bash
# Installs what is missing, builds, and runs widget-gateway locally in front of the stub
# upstream (demo data) with a private redis-server. Ctrl-C stops the gateway first and waits
# for its drain (it returns its quota lease to Redis), then the stub, then Redis.
#   deploy/quickstart.sh [--port PORT] [--build-dir DIR] [--no-build]
# PORT defaults to 8080; the admin listener is on PORT+1010, the stub on PORT+1, Redis on
# PORT+999. --no-build runs the binaries already in DIR/bin (default build/) and installs nothing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
port=8080
build_dir="$root/build"
build=1
while (($#)); do
  case "$1" in
    --port) port=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "usage: $0 [--port PORT] [--build-dir DIR] [--no-build]" >&2; exit 2 ;;
  esac
done
stub_port=$((port + 1))
admin_port=$((port + 1010))
redis_port=$((port + 1000 - 1))

if ((build)); then
  "$root/deploy/install-deps.sh"
  cmake -S "$root" -B "$build_dir" -G Ninja >/dev/null
  cmake --build "$build_dir" --target widget-gateway widget-upstream-stub
fi
bin="$build_dir/bin"

# Each child runs in a session of its own (setsid), out of reach of the terminal's Ctrl-C,
# which only this script receives: it stops them in order. Were they in the terminal's process
# group, Redis would exit at once and the draining gateway would find it gone (redis_down,
# quota_lease_unreturned).
run_dir=$(mktemp -d)
redis_pid=""
stub_pid=""
gateway_pid=""
stop() {  # PID SECONDS: SIGTERM, then SIGKILL if it is still there after SECONDS
  local pid=$1 i
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  trap - EXIT INT TERM
  # The gateway drains (server.drain_timeout, 10 s by default) and gives its lease back first.
  stop "$gateway_pid" 30
  stop "$stub_pid" 5
  stop "$redis_pid" 5
  rm -rf "$run_dir"
}
trap cleanup EXIT
trap 'echo; echo "quickstart: stopping the gateway (drain), then the stub and Redis"; exit 0' INT TERM

# As the quota needs Redis (deploy/README.md): AOF fsynced every second, and no policy that
# could evict the quota keys (noeviction, the default). The run directory goes with Ctrl-C.
setsid redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly yes \
  --appendfsync everysec --maxmemory-policy noeviction \
  --dir "$run_dir" --logfile "$run_dir/redis.log" &
redis_pid=$!
setsid "$bin/widget-upstream-stub" --listen "127.0.0.1:$stub_port" --widgets 100 --seed 1 \
  2>"$run_dir/stub.log" &
stub_pid=$!

for _ in $(seq 50); do
  if grep -q '"event":"listening"' "$run_dir/stub.log" 2>/dev/null; then break; fi
  sleep 0.1
done
widget=$(curl -s "http://127.0.0.1:$stub_port/__stub/widgets?limit=1" | sed -E 's/.*"id":"([^"]+)".*/\1/')

setsid "$bin/widget-gateway" --config "$root/conf/widget-gateway.toml" \
  --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin_port" \
  --upstream "http://127.0.0.1:$stub_port" --redis "redis://127.0.0.1:$redis_port/0" &
gateway_pid=$!

cat <<EOT

widget-gateway is running (Ctrl-C stops it, the stub and redis):
  widget data   http://127.0.0.1:$port/api/v1/widgets/widget/$widget/remote
  reviews       http://127.0.0.1:$port/api/v1/widgets/widget/$widget/reviews/remote?limit=20
  readiness     http://127.0.0.1:$port/readyz
  admin         http://127.0.0.1:$admin_port/readyz
  stub upstream http://127.0.0.1:$stub_port/__stub/stats   (upstream request counters)

EOT
wait "$gateway_pid"
