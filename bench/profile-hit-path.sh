#!/usr/bin/env bash
# Counts the gateway's user-space instructions per request on the hit path, under callgrind:
# bench/profile-hit-path.sh [SCENARIO] [--requests N] [--top K] [--http2] [--build-dir DIR] [--no-build]
# bench/profile-hit-path.sh --handshakes full|resumed [--requests N] ...
# bench/profile-hit-path.sh --tls [--http2] ...   (hits over TLS: HTTP/1.1, or HTTP/2 by ALPN)
#
# Throughput on a shared machine moves by 10-20 % from run to run; an instruction count does
# not. The script starts a private redis-server, the stub and the gateway (under valgrind's
# callgrind, 127.0.0.1 only), warms the scenario's keys, zeroes the counters, sends N requests
# with wg-bench, and prints the instructions per request, the allocations per request (and who
# makes them) and the top functions by own cost. Kernel time (the socket calls) is not
# included: compare builds of the gateway with it, and measure throughput with bench/run.sh.
#
# --handshakes: the cost of a new TLS connection instead. The public listener gets a P-256
# certificate (as bench/tls-h2.sh's), and N connections, one after another, each do a
# handshake (full, or resumed from the previous connection's ticket), one GET of a cached
# widget and a close: per connection, not per request.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCENARIO=hot-hits
REQUESTS=20000
TOP=25
BUILD_DIR="$ROOT/build"
BUILD=1
PROTOCOL=()  # wg-bench's: HTTP/1.1 unless --http2 (h2c, prior knowledge)
HANDSHAKES=""
TLS=0
while (($#)); do
  case "$1" in
    --requests) REQUESTS=${2:?}; shift ;;
    --top) TOP=${2:?}; shift ;;
    --build-dir) BUILD_DIR=${2:?}; shift ;;
    --no-build) BUILD=0 ;;
    --http2) PROTOCOL=(--http2) ;;
    --handshakes) HANDSHAKES=${2:?}; TLS=1; shift ;;
    --tls) TLS=1 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) SCENARIO=$1 ;;
  esac
  shift
done
[[ $REQUESTS =~ ^[1-9][0-9]*$ ]] || { echo "--requests expects a number" >&2; exit 2; }
[[ -z $HANDSHAKES || $HANDSHAKES == full || $HANDSHAKES == resumed ]] ||
  { echo "--handshakes expects full or resumed" >&2; exit 2; }
FILE="$ROOT/bench/scenarios/$SCENARIO.toml"
[[ -f $FILE ]] || FILE=$SCENARIO
[[ -f $FILE ]] || { echo "no scenario $SCENARIO" >&2; exit 2; }
for tool in valgrind callgrind_control redis-server curl python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool (deploy/install-deps.sh --bench-tools)" >&2; exit 1; }
done

log() { printf '[profile] %s\n' "$*" >&2; }
if ((BUILD)); then
  log "building Release in $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j 2 --target widget-gateway widget-upstream-stub wg-bench >/dev/null
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

# The port of a "listening" line (the gateway's and the stub's log format).
listen_port() {
  local i line
  for ((i = 0; i < 600; i++)); do
    line=$(grep -o "\"listener\":\"$2\",\"address\":\"[^\"]*\"" "$1" 2>/dev/null | head -n 1 || true)
    if [[ -n $line ]]; then
      line=${line%\"}
      echo "${line##*:}"
      return 0
    fi
    sleep 0.05
  done
  echo "no $2 listener in $1" >&2
  tail -n 20 "$1" >&2
  return 1
}

REDIS_PORT=$((20000 + RANDOM % 10000))
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
stub_widgets=$("$BIN/wg-bench" --scenario "$FILE" --print-runner | sed -n 's/^stub_widgets=//p')
widgets=$("$BIN/wg-bench" --scenario "$FILE" --print-runner | sed -n 's/^widgets=//p')
"$BIN/widget-upstream-stub" --listen 127.0.0.1:0 --widgets "$stub_widgets" --seed 1 >"$WORK/stub.log" 2>&1 &
PIDS+=($!)
STUB_PORT=$(listen_port "$WORK/stub.log" stub)
curl -s "http://127.0.0.1:$STUB_PORT/__stub/widgets?limit=$widgets" >"$WORK/ids.json"
# As bench/run.sh does: the bench's many connections from one address would otherwise meet the
# per-client limit on ids not yet known valid, and the 429s would be counted as hits.
printf '[log]\naccess_log = "off"\n[access]\nunknown_per_ip_rate = 0\n' >"$WORK/gateway.toml"
if ((TLS)); then
  tls() { openssl "$@" >/dev/null 2>&1; }
  tls req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
    -keyout "$WORK/ca.key" -out "$WORK/ca.pem"
  tls req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/req.pem"
  echo "subjectAltName=IP:127.0.0.1" >"$WORK/ext"
  tls x509 -req -in "$WORK/req.pem" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial \
    -days 2 -extfile "$WORK/ext" -out "$WORK/cert.pem"
  printf '[server]\ntls_cert_file = "%s"\ntls_key_file = "%s"\n' "$WORK/cert.pem" \
    "$WORK/key.pem" >>"$WORK/gateway.toml"
fi
valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" \
  "$BIN/widget-gateway" --config "$WORK/gateway.toml" --listen 127.0.0.1:0 \
  --admin-listen 127.0.0.1:0 --upstream "http://127.0.0.1:$STUB_PORT" \
  --redis "redis://127.0.0.1:$REDIS_PORT/0" --threads 1 >"$WORK/gateway.log" 2>&1 &
GATEWAY_PID=$!
PIDS+=("$GATEWAY_PID")
PORT=$(listen_port "$WORK/gateway.log" public)

# --handshakes: N connections in a row, each a handshake, one GET of one widget and a close.
connections() {
  python3 - "$PORT" "$WORK/ca.pem" "$WORK/ids.json" "$HANDSHAKES" "$1" <<'PY'
import json, socket, ssl, sys
port, ca, ids, mode, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
raw = open(ids).read()
try:
    found = json.loads(raw)
    found = found.get("widgets", found) if isinstance(found, dict) else found
    widget = found[0] if isinstance(found[0], str) else found[0]["id"]
except ValueError:
    widget = raw.split()[0]
context = ssl.create_default_context(cafile=ca)
context.set_alpn_protocols(["http/1.1"])
request = (f"GET /api/v1/widgets/widget/{widget}/remote HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Connection: close\r\n\r\n").encode()
session, resumed = None, 0
for _ in range(n):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as plain:
        with context.wrap_socket(plain, server_hostname="127.0.0.1", session=session) as tls:
            tls.sendall(request)
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
            resumed += tls.session_reused
            version, cipher = tls.version(), tls.cipher()[0]
            if mode == "resumed":
                session = tls.session
print(f"{n} connections, {resumed} resumed, {version}, {cipher}")
PY
}

bench() {
  if [[ -n $HANDSHAKES ]]; then connections "$1"; return; fi
  local scheme=http
  ((TLS)) && scheme=https
  "$BIN/wg-bench" --target "$scheme://127.0.0.1:$PORT" --scenario "$FILE" --ids "$WORK/ids.json" \
    --requests "$1" --warmup 0s --timeout 30s --progress off "${PROTOCOL[@]}"
}
log "warming $SCENARIO's keys"
if [[ -n $HANDSHAKES ]]; then bench 20; else bench 3000 >/dev/null 2>&1; fi
callgrind_control -z "$GATEWAY_PID" >/dev/null 2>&1
log "measuring $REQUESTS requests"
bench "$REQUESTS" 2>&1 | sed 's/^/[profile] /' >&2
callgrind_control -d "$GATEWAY_PID" >/dev/null 2>&1
dump=""
for ((i = 0; i < 100; i++)); do  # the dump is written asynchronously, as callgrind.out.1
  for f in "$WORK"/callgrind.out.*; do [[ -s $f ]] && dump=$f; done
  [[ -z $dump ]] || break
  sleep 0.1
done
[[ -n $dump ]] || { echo "callgrind wrote no dump" >&2; exit 1; }
sleep 0.5  # let it finish writing
# WG_PROFILE_KEEP=FILE keeps the dump, for callgrind_annotate or kcachegrind.
[[ -z ${WG_PROFILE_KEEP:-} ]] || cp "$dump" "$WG_PROFILE_KEEP"

# Own cost per function and calls into the allocator, from the dump's cost lines.
UNIT=request
[[ -z $HANDSHAKES ]] || UNIT=connection
python3 - "$dump" "$REQUESTS" "$TOP" "$UNIT" <<'EOF'
import collections, re, sys
path, requests, top, unit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
names, own, allocs, sites = {}, collections.Counter(), 0, collections.Counter()
current = callee = None
after_calls = False
for line in open(path):
    line = line.rstrip("\n")
    m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3)
        if m.group(1) == "fn":
            current = names[m.group(2)]
        else:
            callee = names[m.group(2)]
        continue
    m = re.match(r"^calls=(\d+)", line)
    if m:
        # One allocation per call into the allocator from outside it (operator new calls
        # malloc, aligned new calls memalign, which calls _mid_memalign: counted once).
        allocator = ("malloc", "memalign", "_mid_memalign.constprop.0")
        if callee in allocator or (callee or "").startswith("operator new("):
            if not (current or "").startswith("operator new(") and current not in allocator:
                allocs += int(m.group(1))
                sites[current] += int(m.group(1))
        after_calls = True
        continue
    if current and re.match(r"^[+-]?\d", line):
        if after_calls:  # inclusive cost of a call: not this function's own
            after_calls = False
            continue
        fields = line.split()
        if len(fields) >= 2:
            own[current] += int(fields[1])
total = sum(own.values())
print(f"instructions per {unit}: {total // requests} (user space, {requests} {unit}s)")
print(f"allocations per {unit}:  {allocs / requests:.2f}")
print(f"top {top} functions by own instructions per {unit}:")
for name, cost in own.most_common(top):
    print(f"  {cost / requests:8.0f}  {100 * cost / total:5.1f}%  {name[:110]}")
print(f"allocations per {unit} by calling function (0.05 or more):")
for name, count in sites.most_common():
    if count / requests < 0.05:
        break
    print(f"  {count / requests:8.2f}  {name[:110]}")
EOF
