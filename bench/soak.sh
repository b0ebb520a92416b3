#!/usr/bin/env bash
# The soak: two gateway instances sharing one Redis run a steady site for a long time while the
# world around them fails on a schedule, and the run fails when something grows or breaks.
#   bench/run.sh soak [options]      (or bench/soak.sh [options])
#
# Load: bench/scenarios/soak.toml (zipf-site visitors plus a 5 % walker over skip and type),
# open loop, half the rate to each instance, from one wg-bench per instance. Faults, timed from
# the start: redis-server SIGKILLed and restarted from its append-only file (appendfsync
# everysec, maxmemory-policy volatile-ttl: the recipes' persistence mode) every --redis-every;
# the stub upstream closing every connection for --outage-for every --outage-every; SIGHUP to
# both gateways every --sighup-every. The last --quiet of the run has no fault, so that both
# instances report to Redis before they stop.
#
# Sampled every --sample-every, per instance: RSS less wg_cache_bytes (what the process holds
# beyond its cache), open file descriptors, and Redis's connected clients; canary keys (warmed
# on both instances before the load) are asked on both, and each must answer 200 every time.
# Per minute: those samples' maxima, req/s and p99 (wg-bench's per-minute histograms).
#
# Fails (exit 1) when, after --settle, RSS less the cache grows by more than max(16 MiB, 20 %),
# open fds by more than 16, or Redis connections by more than 4 (the last third of the run
# against the first third after --settle, each its maximum); when a canary answers anything but
# 200; when an instance does not stop with status 0; or when, after both stopped gracefully,
# the month's quota counter in Redis differs from the number of requests the stub received.
#
# Results: bench/results/<UTC time>-soak/ (or --out DIR): samples.tsv, minutes.tsv, canaries.tsv,
# faults.tsv, summary.md, the wg-bench JSON of each instance and, with gnuplot, soak.png.
# --publish copies the folder to bench/published-soak/ and writes bench/RESULTS-soak.md.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR="$ROOT/bench"

DURATION=30m
RATE=1500
SETTLE=5m
REDIS_EVERY=5m
REDIS_DOWN_FOR=10s
OUTAGE_EVERY=7m
OUTAGE_FOR=60s
SIGHUP_EVERY=1m
SAMPLE_EVERY=10s
QUIET=30s
OUT=""
PUBLISH=0
BUILD_DIR="$ROOT/build"
BUILD=1
INSTALL=1
JOBS=2

usage() {
  cat <<'EOF'
usage: bench/run.sh soak [options]
  --duration D       length of the load (default 30m)
  --rate R           requests per second, both instances together (default 1500)
  --settle D         growth is judged after this (default 5m)
  --redis-every D    SIGKILL and restart redis-server this often (default 5m; 0 = never)
  --redis-down-for D how long Redis stays down each time (default 10s)
  --outage-every D   upstream outage this often (default 7m; 0 = never)
  --outage-for D     length of each outage (default 60s)
  --sighup-every D   SIGHUP to both gateways this often (default 1m; 0 = never)
  --sample-every D   sampling interval (default 10s)
  --quiet D          no fault starts in the run's last D (default 30s)
  --out DIR          the run's folder (new or empty; default bench/results/<UTC time>-soak/)
  --publish          also copy the folder to bench/published-soak/ and write bench/RESULTS-soak.md
  --build-dir DIR    Release build directory (default build, the shipped build CI tests)
  --no-build         use the binaries already in the build directory
  --no-install       do not install missing tools
  --jobs N           build jobs (default 2)
Durations: 500ms, 10s, 5m, 1h. Exit status: 0 passed; 1 a check failed or a run broke; 2 usage.
EOF
}

log() { printf '[soak] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage_error() {
  log "error: $*"
  exit 2
}

while (($#)); do
  case "$1" in
    --duration) DURATION=${2:?}; shift 2 ;;
    --rate) RATE=${2:?}; shift 2 ;;
    --settle) SETTLE=${2:?}; shift 2 ;;
    --redis-every) REDIS_EVERY=${2:?}; shift 2 ;;
    --redis-down-for) REDIS_DOWN_FOR=${2:?}; shift 2 ;;
    --outage-every) OUTAGE_EVERY=${2:?}; shift 2 ;;
    --outage-for) OUTAGE_FOR=${2:?}; shift 2 ;;
    --sighup-every) SIGHUP_EVERY=${2:?}; shift 2 ;;
    --sample-every) SAMPLE_EVERY=${2:?}; shift 2 ;;
    --quiet) QUIET=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --publish) PUBLISH=1; shift ;;
    --build-dir) BUILD_DIR=${2:?}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --no-install) INSTALL=0; shift ;;
    --jobs) JOBS=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage_error "unknown option $1 (see --help)" ;;
  esac
done

# "500ms", "10s", "5m", "1h", "0" → milliseconds.
to_ms() {
  awk -v d="$1" 'BEGIN {
    if (d == "0") { print 0; exit }
    n = d; sub(/[a-z]+$/, "", n); u = substr(d, length(n) + 1)
    if (n !~ /^[0-9]+(\.[0-9]+)?$/) exit 1
    f = (u == "ms") ? 1 : (u == "s") ? 1000 : (u == "m") ? 60000 : (u == "h") ? 3600000 : -1
    if (f < 0) exit 1
    printf "%d\n", n * f + 0.5 }' || usage_error "bad duration $1"
}
DURATION_MS=$(to_ms "$DURATION")
SETTLE_MS=$(to_ms "$SETTLE")
REDIS_EVERY_MS=$(to_ms "$REDIS_EVERY")
REDIS_DOWN_MS=$(to_ms "$REDIS_DOWN_FOR")
OUTAGE_EVERY_MS=$(to_ms "$OUTAGE_EVERY")
OUTAGE_FOR_MS=$(to_ms "$OUTAGE_FOR")
SIGHUP_EVERY_MS=$(to_ms "$SIGHUP_EVERY")
SAMPLE_MS=$(to_ms "$SAMPLE_EVERY")
QUIET_MS=$(to_ms "$QUIET")
if ! [[ $RATE =~ ^[0-9]+$ ]] || ((RATE < 2)); then usage_error "--rate must be an integer of at least 2"; fi
((DURATION_MS >= 60000)) || usage_error "--duration must be at least 1m"
((SAMPLE_MS >= 1000)) || usage_error "--sample-every must be at least 1s"
((SETTLE_MS + 3 * SAMPLE_MS <= DURATION_MS)) ||
  usage_error "--settle must leave at least three samples of the run to judge growth on"
((QUIET_MS < DURATION_MS)) || usage_error "--quiet must be shorter than --duration"

# The commit the run measures, read now: the checkout may move during a long run.
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)

# The run's folder: new or empty, never another run's.
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
if [[ -n $OUT ]]; then
  if [[ -e $OUT ]]; then
    [[ -d $OUT && -z $(ls -A "$OUT") ]] || usage_error "--out $OUT is not a new or empty folder"
  fi
  mkdir -p "$OUT"
  RESULTS_DIR=$(cd "$OUT" && pwd)
else
  RESULTS_DIR="$BENCH_DIR/results/$STAMP-soak"
  mkdir -p "$RESULTS_DIR"
  ln -sfn "$(basename "$RESULTS_DIR")" "$BENCH_DIR/results/latest"
fi
log "results: $RESULTS_DIR"

# ----------------------------------------------------------------------------- tools and build
missing=()
for t in redis-server redis-cli curl; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
if ((${#missing[@]})); then
  ((INSTALL)) || die "missing tools: ${missing[*]} (--no-install given)"
  "$ROOT/deploy/install-deps.sh" --bench-tools
fi
command -v gnuplot >/dev/null 2>&1 && HAVE_GNUPLOT=1 || HAVE_GNUPLOT=0
# shellcheck source-path=SCRIPTDIR source=lib/build.sh
source "$BENCH_DIR/lib/build.sh"
BIN=$(release_binaries "$BUILD" "$BUILD_DIR" "$JOBS")

# ----------------------------------------------------------------------------- processes
WORK=$(mktemp -d "${TMPDIR:-/tmp}/wg-soak.XXXXXX")
PIDS=()
LAST_PID=""
# shellcheck source-path=SCRIPTDIR source=lib/processes.sh
source "$BENCH_DIR/lib/processes.sh"
stop_all_on_exit

REDIS_PORT=$(free_port) || die "no free port for redis-server"
REDIS_PID=""
# The recipes' persistence mode (deploy/): the append-only file, fsync'ed every second, kept
# across the SIGKILLs; cache entries are volatile, the quota keys are not.
start_redis() {
  mkdir -p "$WORK/redis"
  start_bg "$WORK/redis.log" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" \
    --appendonly yes --appendfsync everysec --dir "$WORK/redis" --maxmemory 512mb \
    --maxmemory-policy volatile-ttl --protected-mode yes
  REDIS_PID=$LAST_PID
  wait_port "$REDIS_PORT" || die "redis-server did not start on port $REDIS_PORT"
  # Up once it has loaded its append-only file (LOADING errors until then).
  local i
  for ((i = 0; i < 200; i++)); do
    [[ $(redis-cli -p "$REDIS_PORT" PING 2>/dev/null) == PONG ]] && return 0
    sleep 0.05
  done
  die "redis-server did not load its data"
}
kill_redis() {
  kill -KILL "$REDIS_PID" 2>/dev/null || true
  wait "$REDIS_PID" 2>/dev/null || true
  forget_pid "$REDIS_PID"
  REDIS_PID=""
}

start_redis
start_bg "$WORK/stub.log" "$BIN/widget-upstream-stub" --listen 127.0.0.1:0 --widgets 10000 --seed 1
STUB_PID=$LAST_PID
STUB_PORT=$(listen_port "$WORK/stub.log" stub "$STUB_PID") || die "the stub did not start"
STUB="http://127.0.0.1:$STUB_PORT"
http "$STUB/__stub/widgets" >"$WORK/ids.json" || die "the stub did not list its widgets"

cat >"$WORK/gateway.toml" <<EOF
# Written by bench/soak.sh. A limit far above the run's needs: the lease path is exercised
# without ever refusing.
[quota]
monthly_limit = 100000000
[access]
# wg-bench is one client address asking for widgets nobody fetched yet (all valid).
unknown_per_ip_rate = 0
[log]
access_log = "off"
EOF
GW_PIDS=()
GW_PORTS=()
GW_ADMIN=()
for i in 0 1; do
  start_bg "$WORK/gateway-$i.log" "$BIN/widget-gateway" --config "$WORK/gateway.toml" \
    --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --upstream "$STUB" \
    --redis "redis://127.0.0.1:$REDIS_PORT/0" --threads 1
  GW_PIDS+=("$LAST_PID")
  GW_PORTS+=("$(listen_port "$WORK/gateway-$i.log" public "$LAST_PID")") || die "gateway $i did not start"
  GW_ADMIN+=("$(listen_port "$WORK/gateway-$i.log" admin "$LAST_PID")") || die "gateway $i: no admin listener"
done

# Canary keys: the first widgets' data and first reviews page, cached on both instances before
# the load. A cached key is served through every fault (from L1, fresh or stale).
mapfile -t CANARY_IDS < <(grep -o '"id":"[^"]*"' "$WORK/ids.json" | cut -d'"' -f4 | sed -n '1,5p')
((${#CANARY_IDS[@]} == 5)) || die "the stub listed fewer than 5 widgets"
CANARIES=()
for id in "${CANARY_IDS[@]}"; do
  CANARIES+=("/api/v1/widgets/widget/$id/remote" "/api/v1/widgets/widget/$id/reviews/remote?limit=10&skip=0")
done
for i in 0 1; do
  for path in "${CANARIES[@]}"; do
    code=$(http -o /dev/null -w '%{http_code}' "http://127.0.0.1:${GW_PORTS[$i]}$path" || true)
    [[ $code == 200 ]] || die "warming canary $path on gateway $i answered $code"
  done
done
http -X POST "$STUB/__stub/latency?ms=20" >/dev/null

# ----------------------------------------------------------------------------- load and faults
BENCH_PIDS=()
for i in 0 1; do
  "$BIN/wg-bench" --target "http://127.0.0.1:${GW_PORTS[$i]}" --scenario "$BENCH_DIR/scenarios/soak.toml" \
    --ids "$WORK/ids.json" --label "gateway-$i" --mode open --rate $((RATE / 2)) \
    --duration "${DURATION_MS}ms" --warmup 0s --seed $((i + 1)) --progress off \
    --out "$RESULTS_DIR/wg-bench-$i.json" >"$WORK/wg-bench-$i.out" 2>&1 &
  BENCH_PIDS+=("$!")
  PIDS+=("$!")
done

now_ms() { date +%s%3N; }
START_MS=$(now_ms)
elapsed_ms() { echo $(($(now_ms) - START_MS)); }
metric_of() {  # ADMIN_PORT NAME → the sample's value, or "-"
  { http "http://127.0.0.1:$1/metrics" || true; } |
    awk -v name="$2" '$1 == name { print $2; found = 1; exit } END { if (!found) print "-" }'
}
redis_clients() {
  { redis-cli -p "$REDIS_PORT" INFO clients 2>/dev/null || true; } | tr -d '\r' |
    awk -F: '$1 == "connected_clients" { print $2 - 1; found = 1 } END { if (!found) print "-" }'
}

printf 't_s\tinstance\trss_kb\tcache_bytes\trss_less_cache_kb\tfds\tredis_clients\n' >"$RESULTS_DIR/samples.tsv"
printf 't_s\tinstance\tpath\tstatus\n' >"$RESULTS_DIR/canaries.tsv"
printf 't_s\tfault\n' >"$RESULTS_DIR/faults.tsv"
fault() { printf '%s\t%s\n' "$(awk -v t="$(elapsed_ms)" 'BEGIN { printf "%.1f", t / 1000 }')" "$1" >>"$RESULTS_DIR/faults.tsv"; log "$1"; }

sample() {
  local t i pid rss cache fds clients
  t=$(awk -v t="$(elapsed_ms)" 'BEGIN { printf "%.1f", t / 1000 }')
  clients=$([[ -n $REDIS_PID ]] && redis_clients || echo -)
  for i in 0 1; do
    pid=${GW_PIDS[$i]}
    kill -0 "$pid" 2>/dev/null || die "gateway $i exited during the run (log: $(tail -n 5 "$WORK/gateway-$i.log"))"
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
    cache=$(metric_of "${GW_ADMIN[$i]}" 'wg_cache_bytes{tier="l1"}')
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    local less=-
    [[ $cache == - ]] || less=$(awk -v r="$rss" -v c="$cache" 'BEGIN { printf "%d", r - c / 1024 }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$i" "$rss" "$cache" "$less" "$fds" "$clients" \
      >>"$RESULTS_DIR/samples.tsv"
    local path code
    for path in "${CANARIES[@]}"; do
      code=$(http -o /dev/null -w '%{http_code}' "http://127.0.0.1:${GW_PORTS[$i]}$path" || true)
      printf '%s\t%s\t%s\t%s\n' "$t" "$i" "$path" "${code:-none}" >>"$RESULTS_DIR/canaries.tsv"
    done
  done
}

# One loop, a tick every 250 ms: each scheduled event fires once when its time has come.
next_sample=0
next_redis=$((REDIS_EVERY_MS > 0 ? REDIS_EVERY_MS : -1))
redis_back_at=-1
next_outage=$((OUTAGE_EVERY_MS > 0 ? OUTAGE_EVERY_MS : -1))
outage_ends_at=-1
next_sighup=$((SIGHUP_EVERY_MS > 0 ? SIGHUP_EVERY_MS : -1))
quiet_from=$((DURATION_MS - QUIET_MS))
bench_running() {
  local p
  for p in "${BENCH_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}
while bench_running; do
  t=$(elapsed_ms)
  if ((redis_back_at >= 0 && t >= redis_back_at)); then
    start_redis
    redis_back_at=-1
    fault "redis-server restarted from its append-only file"
  fi
  if ((outage_ends_at >= 0 && t >= outage_ends_at)); then
    http -X POST "$STUB/__stub/fault?mode=none" >/dev/null
    outage_ends_at=-1
    fault "upstream back"
  fi
  if ((next_redis >= 0 && t >= next_redis)); then
    if ((t < quiet_from)); then
      kill_redis
      redis_back_at=$((t + REDIS_DOWN_MS))
      fault "redis-server SIGKILLed"
    fi
    next_redis=$((next_redis + REDIS_EVERY_MS))
  fi
  if ((next_outage >= 0 && t >= next_outage)); then
    if ((t < quiet_from)); then
      http -X POST "$STUB/__stub/fault?mode=close" >/dev/null
      outage_ends_at=$((t + OUTAGE_FOR_MS))
      fault "upstream outage (every connection closed)"
    fi
    next_outage=$((next_outage + OUTAGE_EVERY_MS))
  fi
  if ((next_sighup >= 0 && t >= next_sighup)); then
    for pid in "${GW_PIDS[@]}"; do kill -HUP "$pid"; done
    fault "SIGHUP to both gateways"
    next_sighup=$((next_sighup + SIGHUP_EVERY_MS))
  fi
  if ((t >= next_sample && t < DURATION_MS)); then
    sample
    next_sample=$((next_sample + SAMPLE_MS))
  fi
  sleep 0.25
done
[[ -n $REDIS_PID ]] || start_redis  # (never: faults stop --quiet before the end)
((outage_ends_at < 0)) || http -X POST "$STUB/__stub/fault?mode=none" >/dev/null

bench_failed=()
for i in 0 1; do
  status=0
  wait "${BENCH_PIDS[$i]}" || status=$?
  forget_pid "${BENCH_PIDS[$i]}"
  # 5 would be a --fail-if, which is not given; errors during outages are expected of misses.
  ((status == 0)) || bench_failed+=("wg-bench $i exited $status: $(tail -n 3 "$WORK/wg-bench-$i.out")")
done

# ----------------------------------------------------------------------------- graceful stops
# Both instances report and give their leases back on SIGTERM; then the month's counter must
# equal what the stub received.
sleep 2
stop_failed=()
for i in 0 1; do
  pid=${GW_PIDS[$i]}
  kill -TERM "$pid"
  status=0
  wait "$pid" || status=$?
  forget_pid "$pid"
  ((status == 0)) || stop_failed+=("gateway $i exited $status on SIGTERM")
done
upstream=$(http "$STUB/__stub/stats" | sed -n 's/.*"total":\([0-9]*\).*/\1/p')
month_key=$(redis-cli -p "$REDIS_PORT" --scan --pattern 'wg:quota:{*}' |
  grep -E '^wg:quota:\{[0-9]{4}-[0-9]{2}\}$' | sort | tail -n 1 || true)
counter=$([[ -n $month_key ]] && redis-cli -p "$REDIS_PORT" GET "$month_key" || echo 0)

# ----------------------------------------------------------------------------- judgement
# Per minute: samples' maxima per instance, and each instance's req/s and p99 from wg-bench.
minute_load() {  # FILE → "minute<TAB>req/s<TAB>p99_ms" lines
  grep -o '{"minute": [^}]*}' "$1" | awk -F'[:,]' '{
    m = $2 + 0; s = $4 + 0; r = $6 + 0; p99 = $12 + 0
    printf "%d\t%.0f\t%.2f\n", m, (s > 0 ? r / s : 0), p99 / 1000 }'
}
for i in 0 1; do minute_load "$RESULTS_DIR/wg-bench-$i.json" >"$WORK/load-$i.tsv"; done
awk -F'\t' -v OFS='\t' '
  FILENAME ~ /load-0/ { rps0[$1] = $2; p0[$1] = $3; next }
  FILENAME ~ /load-1/ { rps1[$1] = $2; p1[$1] = $3; next }
  FNR == 1 { next }
  {
    m = int($1 / 60); k = m SUBSEP $2
    if (!(m in seen)) { seen[m] = 1; if (m > last) last = m }
    if ($5 != "-" && (!(k in rss) || $5 > rss[k])) rss[k] = $5
    if (!(k in fds) || $6 > fds[k]) fds[k] = $6
    if ($7 != "-" && (!(m in rc) || $7 > rc[m])) rc[m] = $7
  }
  END {
    print "minute", "rss_less_cache_mb_0", "rss_less_cache_mb_1", "fds_0", "fds_1", "redis_clients", "rps_0", "rps_1", "p99_ms_0", "p99_ms_1"
    for (m = 0; m <= last; m++) {
      if (!(m in seen)) continue
      print m, sprintf("%.1f", rss[m SUBSEP 0] / 1024), sprintf("%.1f", rss[m SUBSEP 1] / 1024),
        fds[m SUBSEP 0], fds[m SUBSEP 1], (m in rc) ? rc[m] : "-",
        (m in rps0) ? rps0[m] : "-", (m in rps1) ? rps1[m] : "-", (m in p0) ? p0[m] : "-", (m in p1) ? p1[m] : "-"
    }
  }' "$WORK/load-0.tsv" "$WORK/load-1.tsv" "$RESULTS_DIR/samples.tsv" >"$RESULTS_DIR/minutes.tsv"

# Growth: after --settle, the maximum over the last third of the samples against the maximum
# over the first third, per instance (Redis connections: both together, samples with Redis up).
growth=$(awk -F'\t' -v settle="$SETTLE_MS" '
  NR == 1 || $1 * 1000 < settle { next }
  { n[$2]++; t[$2, n[$2]] = $1; r[$2, n[$2]] = $5; f[$2, n[$2]] = $6; c[$2, n[$2]] = $7 }
  function third_max(a, inst, from, to,   i, m) {
    m = -1
    for (i = from; i <= to; i++) if (a[inst, i] != "-" && a[inst, i] + 0 > m) m = a[inst, i] + 0
    return m
  }
  END {
    for (inst = 0; inst <= 1; inst++) {
      k = n[inst]; third = int(k / 3); if (third < 1) third = 1
      r0 = third_max(r, inst, 1, third); r1 = third_max(r, inst, k - third + 1, k)
      f0 = third_max(f, inst, 1, third); f1 = third_max(f, inst, k - third + 1, k)
      c0 = third_max(c, inst, 1, third); c1 = third_max(c, inst, k - third + 1, k)
      allowed = (r0 * 0.2 > 16384) ? r0 * 0.2 : 16384
      printf "rss_less_cache %d %d %d %s\n", inst, r0, r1, (r1 - r0 > allowed) ? "GREW" : "ok"
      printf "fds %d %d %d %s\n", inst, f0, f1, (f1 - f0 > 16) ? "GREW" : "ok"
      if (inst == 0) printf "redis_clients %d %d %d %s\n", inst, c0, c1, (c1 - c0 > 4) ? "GREW" : "ok"
    }
  }' "$RESULTS_DIR/samples.tsv")

canary_failures=$(awk -F'\t' 'NR > 1 && $4 != 200' "$RESULTS_DIR/canaries.tsv" | wc -l)
canary_checks=$(($(wc -l <"$RESULTS_DIR/canaries.tsv") - 1))
failures=()
while read -r what inst before after verdict; do
  [[ $verdict == ok ]] || failures+=("$what of instance $inst grew from $before to $after after the settle period")
done <<<"$growth"
((canary_failures == 0)) || failures+=("$canary_failures of $canary_checks canary answers were not 200 (canaries.tsv)")
((counter == upstream)) || failures+=("the quota counter is $counter after graceful stops; the stub received $upstream requests")
failures+=("${stop_failed[@]}" "${bench_failed[@]}")

{
  echo "# Soak: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Command: \`bench/run.sh soak --duration $DURATION --rate $RATE --settle $SETTLE --redis-every $REDIS_EVERY --redis-down-for $REDIS_DOWN_FOR --outage-every $OUTAGE_EVERY --outage-for $OUTAGE_FOR --sighup-every $SIGHUP_EVERY --sample-every $SAMPLE_EVERY\`"
  echo "Commit: $COMMIT (at the start); machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); nothing pinned (two gateways, two wg-bench, the stub and Redis share the CPUs)."
  echo
  echo "## Verdict: $( ((${#failures[@]} == 0)) && echo passed || echo FAILED)"
  echo
  for f in "${failures[@]}"; do echo "- $f"; done
  ((${#failures[@]} == 0)) || echo
  echo "| check | instance | first third after settle | last third | verdict |"
  echo "|---|---|---|---|---|"
  while read -r what inst before after verdict; do
    echo "| $what | $inst | $before | $after | $verdict |"
  done <<<"$growth"
  echo
  echo "Canary answers: $canary_checks, not 200: $canary_failures. Quota counter after graceful stops: $counter; requests the stub received: $upstream."
  echo "Faults: $(awk 'NR > 1' "$RESULTS_DIR/faults.tsv" | cut -f2 | sort | uniq -c | awk '{ c = $1; $1 = ""; printf "%s%d ×%s", (n++ ? "; " : ""), c, $0 }')."
  echo
  echo "## Per minute (samples' maxima; req/s and p99 per instance from wg-bench's per-minute histograms)"
  echo
  awk -F'\t' 'NR == 1 { h = "|"; s = "|"; for (i = 1; i <= NF; i++) { h = h " " $i " |"; s = s "---|" } print h; print s; next }
    { l = "|"; for (i = 1; i <= NF; i++) l = l " " $i " |"; print l }' "$RESULTS_DIR/minutes.tsv"
} >"$RESULTS_DIR/summary.md"

if ((HAVE_GNUPLOT)); then
  gnuplot 2>"$RESULTS_DIR/gnuplot.log" <<EOF || log "gnuplot failed; no plot (gnuplot.log)"
set terminal pngcairo size 1200,900 noenhanced
set output "$RESULTS_DIR/soak.png"
set datafile separator "\t"
set datafile missing "-"
set key top left
set multiplot layout 2,2 title "soak: per minute"
set xlabel "minute"
set ylabel "MiB"
set title "RSS less wg\\_cache\\_bytes"
plot "$RESULTS_DIR/minutes.tsv" using 1:2 skip 1 with linespoints title "gateway 0", "" using 1:3 skip 1 with linespoints title "gateway 1"
set ylabel "count"
set title "open fds and Redis connections"
plot "" using 1:4 skip 1 with linespoints title "fds 0", "" using 1:5 skip 1 with linespoints title "fds 1", "" using 1:6 skip 1 with linespoints title "Redis clients"
set ylabel "req/s"
set title "answers per second"
plot "" using 1:7 skip 1 with linespoints title "gateway 0", "" using 1:8 skip 1 with linespoints title "gateway 1"
set ylabel "ms"
set title "p99"
plot "" using 1:9 skip 1 with linespoints title "gateway 0", "" using 1:10 skip 1 with linespoints title "gateway 1"
unset multiplot
EOF
fi

if ((PUBLISH)); then
  rm -rf "$BENCH_DIR/published-soak"
  cp -r "$RESULTS_DIR" "$BENCH_DIR/published-soak"
  cp "$RESULTS_DIR/summary.md" "$BENCH_DIR/RESULTS-soak.md"
  log "published to bench/published-soak/ and bench/RESULTS-soak.md"
fi

sed -n '1,/^## Per minute/p' "$RESULTS_DIR/summary.md" >&2
((${#failures[@]} == 0)) || exit 1
log "passed"
