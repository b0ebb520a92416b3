#!/usr/bin/env bash
# The hit path over HTTPS, side by side with nginx: HTTP/1.1 over TLS and HTTP/2 over TLS,
# driven by wg-bench (closed loop, one io thread) and by h2load (nghttp2's load generator,
# one thread), same certificate, same key, same cipher choice (TLS 1.3, the client's default),
# one gateway thread against one nginx worker; and a handshake-heavy cell: a new connection
# for every request (openssl s_time, two clients at once), with session resumption off (a
# full handshake each time) and on (-reuse: TLS 1.3 session tickets).
#   bench/tls-h2.sh [--duration 8s] [--reps 3] [--out DIR] [--build-dir DIR] [--no-build]
# The gateway serves from its cache (a widget warmed first); nginx serves the same URL from
# proxy_cache in front of the same stub upstream. Runs alternate (gateway, nginx, gateway, ...)
# so that a noisy neighbour hurts both alike; the figures are medians and their ratio.
# Results go to DIR (default bench/results/<UTC time>-tls-h2/), never to tracked files.
# On 2 cores the client shares the machine with the server: the absolute figures are the
# machine's, the ratio is what carries over. The keep-alive cells exclude handshakes; the
# handshake cell is nothing but them.
set -Eeuo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=8s
REPS=3
OUT=""
BUILD_DIR="$ROOT/build"
BUILD=1
while (($#)); do
  case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "tls-h2.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$ROOT/bench/results/$(date -u +%Y%m%dT%H%M%SZ)-tls-h2}
mkdir -p "$OUT"
for tool in nginx h2load openssl; do
  command -v "$tool" >/dev/null || { echo "tls-h2.sh: $tool missing (deploy/install-deps.sh --bench-tools)" >&2; exit 1; }
done

if ((BUILD)); then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target widget-gateway widget-upstream-stub wg-bench -j 2 >/dev/null
fi
BIN="$BUILD_DIR/bin"

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# One certificate for both servers, from a CA made here.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
  -keyout "$WORK/ca.key" -out "$WORK/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -keyout "$WORK/key.pem" -out "$WORK/req.pem" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$WORK/ext"
openssl x509 -req -in "$WORK/req.pem" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial \
  -days 2 -extfile "$WORK/ext" -out "$WORK/cert.pem" 2>/dev/null

REDIS_PORT=$(free_port); STUB_PORT=$(free_port); GW_PORT=$(free_port); NGINX_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
"$BIN/widget-upstream-stub" --listen "127.0.0.1:$STUB_PORT" --widgets 20 --seed 1 >"$WORK/stub.log" 2>&1 &
PIDS+=($!)
wait_port "$REDIS_PORT" || exit 1
wait_port "$STUB_PORT" || exit 1
cat >"$WORK/gateway.toml" <<EOF
[server]
tls_cert_file = "$WORK/cert.pem"
tls_key_file = "$WORK/key.pem"
[log]
access_log = "off"
EOF
"$BIN/widget-gateway" --config "$WORK/gateway.toml" --upstream "http://127.0.0.1:$STUB_PORT" \
  --redis "redis://127.0.0.1:$REDIS_PORT/0" --listen "127.0.0.1:$GW_PORT" \
  --admin-listen "127.0.0.1:$(free_port)" --threads 1 >"$WORK/gateway.log" 2>&1 &
PIDS+=($!)
mkdir -p "$WORK/nginx/cache" "$WORK/nginx/tmp"
user_line=""
[[ $(id -u) -ne 0 ]] || user_line="user $(id -un) $(id -gn);"
cat >"$WORK/nginx/nginx.conf" <<EOF
$user_line
worker_processes 1;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/tmp/body;
  proxy_temp_path $WORK/nginx/tmp/proxy;
  keepalive_requests 1000000;
  proxy_cache_path $WORK/nginx/cache keys_zone=wg:16m inactive=1d use_temp_path=off;
  upstream stub { server 127.0.0.1:$STUB_PORT; keepalive 16; }
  server {
    listen 127.0.0.1:$NGINX_PORT ssl http2;
    ssl_certificate $WORK/cert.pem;
    ssl_certificate_key $WORK/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:tls:10m;
    http2_max_concurrent_streams 100;
    location / {
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache wg;
      proxy_cache_key \$request_uri;
      proxy_cache_valid 200 1h;
      proxy_cache_lock on;
    }
  }
}
EOF
nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" &
PIDS+=($!)
if ! wait_port "$GW_PORT" || ! wait_port "$NGINX_PORT"; then
  cat "$WORK/gateway.log" "$WORK/nginx/error.log" >&2
  exit 1
fi

ID=$(curl -s "http://127.0.0.1:$STUB_PORT/__stub/widgets?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
PATH_=/api/v1/widgets/widget/$ID/remote
for port in "$GW_PORT" "$NGINX_PORT"; do  # warm both caches
  for _ in 1 2 3; do curl -s --cacert "$WORK/ca.pem" -o /dev/null "https://127.0.0.1:$port$PATH_"; done
done

# wg-bench sends only $PATH_ (one widget, widget requests only), verifies the certificate
# against the CA made here, and runs a closed loop for DURATION after 1 s of warm-up:
# HTTP/1.1 with 64 connections; HTTP/2 with 16 connections x 10 streams.
printf '%s\n' "$ID" >"$WORK/ids.txt"
cat >"$WORK/one-widget.toml" <<EOF
name = "tls-h2"
description = "one cached widget, over and over"
pool = 1
[keys]
widgets = 1
[mix]
widget = 1.0
reviews = 0.0
EOF
run_bench() {  # protocol system port rep -> "req/s mean_ms succeeded errored"
  local proto=$1 system=$2 port=$3 rep=$4 args json
  if [[ $proto == h1 ]]; then args=(--connections 64); else args=(--http2 --connections 16 --streams 10); fi
  json="$OUT/$proto-$system-$rep.json"
  "$BIN/wg-bench" --target "https://127.0.0.1:$port" --cacert "$WORK/ca.pem" \
    --scenario "$WORK/one-widget.toml" --ids "$WORK/ids.txt" "${args[@]}" --threads 1 \
    --duration "$DURATION" --warmup 1s --label "$system" --progress off --out "$json" \
    >>"$OUT/wg-bench.log" 2>&1 || true
  python3 - "$json" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("0 0 0 0")  # no result: wg-bench.log says why
    sys.exit()
print("%.2f %.3f %d %d" % (r["throughput_rps"], r["latency_us"]["mean"] / 1000,
                           r["responses"], r["errors_total"]))
EOF
}

# h2load: the same loads (HTTP/1.1: 64 connections; HTTP/2: 16 x 10 streams), one thread,
# DURATION after 1 s of warm-up. -> "req/s succeeded errored"
run_h2load() {  # protocol port rep system
  local proto=$1 port=$2 rep=$3 system=$4 args log
  if [[ $proto == h1 ]]; then args=(--h1 -c 64 -m 1); else args=(-c 16 -m 10); fi
  log="$OUT/h2load-$proto-$system-$rep.log"
  h2load "${args[@]}" -t 1 -D "${DURATION%s}" --warm-up-time 1 "https://127.0.0.1:$port$PATH_" >"$log" 2>&1 || true
  awk '/^finished in/ { gsub(",", ""); rps = $4 }
       /^requests:/ { gsub(",", ""); for (i = 1; i < NF; i++) { if ($(i + 1) == "succeeded") ok = $i; if ($(i + 1) == "errored") err = $i } }
       END { printf "%.2f %d %d\n", rps, ok, err }' "$log"
}

# openssl s_time: a new TLS connection per request ("GET path HTTP/1.0"), two clients at once
# for DURATION; "new" makes a full handshake each time, "reuse" resumes the first session.
# -> "connections/s bytes_per_connection"
run_handshakes() {  # mode port rep system
  local mode=$1 port=$2 rep=$3 system=$4 log pids=() i
  log="$OUT/s_time-$mode-$system-$rep"
  for i in 1 2; do
    openssl s_time -connect "127.0.0.1:$port" -CAfile "$WORK/ca.pem" -"$mode" \
      -time "${DURATION%s}" -www "$PATH_" >"$log-$i.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  # "N connections in T real seconds, B bytes read per connection", per client: summed rates.
  cat "$log"-*.log | awk '/connections in .* real seconds/ { rate += $1 / $4; bytes = $(NF - 4) }
    END { printf "%.2f %d\n", rate, bytes }'
}

declare -A RESULTS H2LOAD HANDSHAKES
for rep in $(seq "$REPS"); do
  for proto in h1 h2; do
    for system in gateway nginx; do
      port=$GW_PORT; [[ $system == nginx ]] && port=$NGINX_PORT
      RESULTS[$proto,$system,$rep]=$(run_bench "$proto" "$system" "$port" "$rep")
      echo "[tls-h2] rep $rep $proto $system: ${RESULTS[$proto,$system,$rep]}" >&2
      H2LOAD[$proto,$system,$rep]=$(run_h2load "$proto" "$port" "$rep" "$system")
      echo "[tls-h2] rep $rep $proto $system (h2load): ${H2LOAD[$proto,$system,$rep]}" >&2
    done
  done
  for mode in new reuse; do
    for system in gateway nginx; do
      port=$GW_PORT; [[ $system == nginx ]] && port=$NGINX_PORT
      HANDSHAKES[$mode,$system,$rep]=$(run_handshakes "$mode" "$port" "$rep" "$system")
      echo "[tls-h2] rep $rep handshakes ($mode) $system: ${HANDSHAKES[$mode,$system,$rep]}" >&2
    done
  done
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# median_of ARRAY CELL FIELD: the median over the runs of FIELD of ARRAY[CELL,system,run], as
# "gateway nginx ratio" (ratio: gateway ÷ nginx).
median_of() {
  local -n figures=$1
  local system rep values=()
  for system in gateway nginx; do
    values+=("$(for rep in $(seq "$REPS"); do echo "${figures[$2,$system,$rep]}" | cut -d' ' -f"$3"; done | median)")
  done
  echo "${values[0]} ${values[1]} $(awk -v a="${values[0]}" -v b="${values[1]}" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')"
}
protocol_name() { if [[ $1 == h1 ]]; then echo "HTTP/1.1 + TLS"; else echo "HTTP/2 + TLS"; fi; }
{
  echo "# The hit path over TLS: gateway (1 thread) vs nginx (1 worker)"
  echo
  echo "$(date -u +%FT%TZ), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)),"
  echo "wg-bench ${DURATION} per run after 1 s warm-up (closed loop, 1 io thread), $REPS runs each, alternating; TLS 1.3."
  echo "HTTP/1.1: 64 connections; HTTP/2: 16 connections x 10 streams. Medians; higher req/s is better."
  echo
  echo "| protocol | system | req/s | mean latency ms | req/s ratio (gateway ÷ nginx) |"
  echo "|---|---|---:|---:|---:|"
  for proto in h1 h2; do
    read -r gw ng ratio <<<"$(median_of RESULTS "$proto" 1)"
    read -r gw_lat ng_lat _ <<<"$(median_of RESULTS "$proto" 2)"
    echo "| $(protocol_name "$proto") | gateway | $gw | $gw_lat |  |"
    echo "| $(protocol_name "$proto") | nginx | $ng | $ng_lat | $ratio |"
  done
  echo
  echo "The same loads from h2load (1 thread, ${DURATION} after 1 s of warm-up), medians:"
  echo
  echo "| protocol | system | req/s | req/s ratio (gateway ÷ nginx) |"
  echo "|---|---|---:|---:|"
  for proto in h1 h2; do
    read -r gw ng ratio <<<"$(median_of H2LOAD "$proto" 1)"
    echo "| $(protocol_name "$proto") | gateway | $gw |  |"
    echo "| $(protocol_name "$proto") | nginx | $ng | $ratio |"
  done
  echo
  echo "A new connection per request (openssl s_time, 2 clients, ${DURATION}; each reads one answer), medians:"
  echo
  echo "| handshakes | system | connections/s | bytes per connection | ratio (gateway ÷ nginx) |"
  echo "|---|---|---:|---:|---:|"
  for mode in new reuse; do
    read -r gw ng ratio <<<"$(median_of HANDSHAKES "$mode" 1)"
    name="full (no resumption)"
    [[ $mode == new ]] || name="resumed (session tickets)"
    echo "| $name | gateway | $gw | $(echo "${HANDSHAKES[$mode,gateway,1]}" | cut -d' ' -f2) |  |"
    echo "| $name | nginx | $ng | $(echo "${HANDSHAKES[$mode,nginx,1]}" | cut -d' ' -f2) | $ratio |"
  done
  echo
  echo "Every run's figures (req/s, mean latency ms, succeeded, errored):"
  echo
  for key in $(printf '%s\n' "${!RESULTS[@]}" | sort); do echo "- $key: ${RESULTS[$key]}"; done
  for key in $(printf '%s\n' "${!H2LOAD[@]}" | sort); do echo "- h2load $key: ${H2LOAD[$key]}"; done
  for key in $(printf '%s\n' "${!HANDSHAKES[@]}" | sort); do echo "- s_time $key: ${HANDSHAKES[$key]}"; done
} | tee "$OUT/summary.md"
echo "[tls-h2] results in $OUT" >&2
