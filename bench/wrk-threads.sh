#!/usr/bin/env bash
# Hits on widget data (2.9 KB) as a user with wrk would measure them: wrk -t2 -c128, nothing
# pinned (client and server share the cores), the gateway with --threads 1 and 2 against nginx
# proxy_cache with 1 and 2 workers (reuseport), alternating 4 s runs, 3 repetitions. Loopback
# ports 7394 (Redis), 18081 (gateway) and 18082 (nginx). bench/run.sh scaling is the pinned,
# repeated version with latency figures.
#   bench/wrk-threads.sh        (BIN=DIR for another build; default build/bin)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${BIN:-$ROOT/build/bin}
W=$(mktemp -d)
chmod 755 "$W"  # nginx's workers (another user) write their cache below it
PIDS=()
cleanup() {
  kill "${PIDS[@]}" 2>/dev/null || true
  [[ -f $W/ng/nginx.pid ]] && kill "$(cat "$W/ng/nginx.pid")" 2>/dev/null
  redis-cli -p 7394 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT

redis-server --bind 127.0.0.1 --port 7394 --save '' --appendonly no --daemonize yes \
  --logfile "$W/redis.log"
"$B/widget-upstream-stub" --listen 127.0.0.1:0 --widgets 20 --seed 1 >"$W/stub.log" 2>&1 &
PIDS+=($!)
sleep 0.5
SP=$(grep -o '"address":"[^"]*"' "$W/stub.log" | head -1 | sed 's/.*://; s/"//')
ID=$(curl -s "http://127.0.0.1:$SP/__stub/widgets?limit=1" | grep -o '"id":"[^"]*"' | cut -d'"' -f4)
P="/api/v1/widgets/widget/$ID/remote"
printf '[log]\naccess_log = "off"\n' >"$W/gw.toml"

gateway() {  # THREADS
  "$B/widget-gateway" --config "$W/gw.toml" --listen 127.0.0.1:18081 --admin-listen 127.0.0.1:0 \
    --upstream "http://127.0.0.1:$SP" --redis redis://127.0.0.1:7394/0 --threads "$1" \
    >"$W/gw.log" 2>&1 &
  local pid=$!
  sleep 0.8
  curl -s -o /dev/null "http://127.0.0.1:18081$P"
  wrk -t2 -c128 -d4s "http://127.0.0.1:18081$P" | awk '/Requests\/sec/ {print $2}'
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

nginx_run() {  # WORKERS
  rm -rf "$W/ng"
  mkdir -p "$W/ng/cache"
  cat >"$W/ng/nginx.conf" <<EOF
worker_processes $1;
pid $W/ng/nginx.pid;
error_log $W/ng/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  proxy_cache_path $W/ng/cache keys_zone=c:10m;
  upstream up { server 127.0.0.1:$SP; keepalive 16; }
  server {
    listen 127.0.0.1:18082 reuseport;
    location / {
      proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_cache c; proxy_cache_valid 200 1h; proxy_cache_lock on;
    }
  }
}
EOF
  nginx -c "$W/ng/nginx.conf" -p "$W/ng"
  sleep 0.5
  curl -s -o /dev/null "http://127.0.0.1:18082$P"
  wrk -t2 -c128 -d4s "http://127.0.0.1:18082$P" | awk '/Requests\/sec/ {print $2}'
  kill "$(cat "$W/ng/nginx.pid")"
  rm -f "$W/ng/nginx.pid"
  sleep 0.5
}

for rep in 1 2 3; do
  for n in 1 2; do echo "rep $rep N=$n: gateway $(gateway "$n") req/s, nginx $(nginx_run "$n") req/s"; done
done
