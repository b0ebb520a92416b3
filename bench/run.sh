#!/usr/bin/env bash
# Runs the bench harness: bench/run.sh SCENARIO|all [--compare] [options], or compares two
# result folders: bench/run.sh compare DIR_A DIR_B [--threshold 10%]. See bench/README.md.
#
# Builds the gateway, the stub upstream and wg-bench in Release (in build/, the shipped build that
# tests/run-all.sh tests first), starts a private redis-server, the stub and the system under test on 127.0.0.1 only,
# drives the scenario's load (and its faults) with wg-bench, and reports the client's figures
# with the stub's upstream request count and the server's peak RSS. With --compare the same
# load also goes, in the same run and alternating (A B C D E A B C D E), to nginx proxy_cache,
# Varnish, nginx serving the same bytes as static files and a constant-response reference server. A scenario named `scaling` (or `scaling-*`)
# is swept over thread counts instead: the gateway with --threads 1..N and nginx with
# worker_processes 1..N. A scenario with a baseline (runner.baseline, e.g. quota-walk's
# zipf-site) has the baseline run first in the same folder, and a table that compares the two.
# Every process it starts is stopped by a trap on exit.
#
# Everything a run writes goes to its own folder, bench/results/<UTC time>-<scenario|all>/ (or
# --out DIR), and bench/results/latest points to the newest one; tracked files (bench/published/
# and bench/RESULTS.md) change only with --publish.
set -Eeuo pipefail  # -E: the ERR trap below also reports failures inside functions

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR="$ROOT/bench"
ALL_SCENARIOS=(hot-hits hot-hits-256 large-page big-pages big-pages-256 zipf-site zipf-site-redis-only quota-walk memory-10k
  cold-storm cache-busters upstream-outage redis-outage scaling)
# `scaling` (and any scaling-*) is swept over thread counts: the gateway and nginx with 1..N
# threads, pinned differently.

usage() {
  cat <<'EOF'
usage: bench/run.sh SCENARIO|all [options]
       bench/run.sh compare DIR_A DIR_B [--threshold 10%]
       bench/run.sh soak [--duration 30m] [options]   (bench/soak.sh --help)
       bench/run.sh refresh-day [--systems LIST] [options]   (bench/refresh-day.py --help)
  SCENARIO          a name from bench/scenarios/ (without .toml) or a path to a .toml file
  --compare         also run nginx proxy_cache, Varnish, nginx serving static files and the
                    constant-response reference
  --systems LIST    comma-separated subset of gateway,nginx,varnish,static,constant
  --duration D      measured duration of every run (e.g. 5s; default: the scenario's)
  --warmup D        warm-up of every run (default: the scenario's)
  --reps N          repetitions per system (default: the scenario's, 1-3)
  --gateway-threads N  --threads of the gateway (default 1; nginx runs 1 worker)
  --connections N   wg-bench connections of every run (default: the scenario's)
  --bench-threads N wg-bench io threads of every run (default: the scenario's; on a scaling
                    scenario, one per CPU of --client-cpus)
  --max-threads N   scaling scenarios: sweep the gateway's threads and nginx's workers over
                    1..N (default: the number of CPUs)
  --client-cpus L   scaling scenarios: taskset CPU list for wg-bench, the stub and redis-server
                    (default: the CPUs above N, or the last CPU when N covers them all)
  --fail-if EXPR    passed to wg-bench for the gateway's runs (e.g. p99>5ms,errors>0,rate<0.95);
                    the script exits 5 when one of them crossed it
  --out DIR         the run's folder (default: bench/results/<UTC time>-<scenario|all>/)
  --publish         also copy the run's folder to bench/published/ (replacing it) and write
                    bench/RESULTS.md from it; without it no tracked file changes
  --build-dir DIR   Release build directory (default: build, shared with the test suite)
  --no-build        use the binaries already in the build directory
  --no-install      do not install missing tools (nginx-light, varnish, gnuplot-nox)
  --jobs N          build jobs (default 2)
compare: per scenario and system in both folders (each with a runs.tsv; "latest" and folder
names under bench/results/ work too), the medians of req/s, p50, p99, errors, upstream calls
per 1k and peak RSS, their change, and a verdict; "regression" when a median moved the wrong
way by more than the threshold (default 10%) and the ranges over repetitions do not overlap.
Exit status: 0 done (compare: no regression); 1 a run failed (compare: a regression); 2 usage
error; 5 only --fail-if thresholds were crossed.
EOF
}

log() { printf '[run.sh] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage_error() {
  log "error: $*"
  exit 2
}

# ----------------------------------------------------------------------------- compare
# A results folder given to compare: a path, or a folder name under bench/results/ ("latest").
results_folder() {
  local d
  for d in "$1" "$BENCH_DIR/results/$1"; do
    if [[ -f $d/runs.tsv ]]; then
      (cd "$d" && pwd)
      return 0
    fi
  done
  return 1
}

# compare DIR_A DIR_B [--threshold P%]: prints a markdown table; exits 0 (no regression),
# 1 (a regression) or 2 (usage: a missing folder, no row in common).
compare_main() {
  local a="" b="" threshold=10 dir_a dir_b status=0
  while (($#)); do
    case "$1" in
      --threshold) threshold=${2:-}; shift ;;
      --threshold=*) threshold=${1#*=} ;;
      -h | --help) usage; exit 0 ;;
      -*) usage_error "compare: unknown option $1" ;;
      *)
        if [[ -z $a ]]; then a=$1
        elif [[ -z $b ]]; then b=$1
        else usage_error "compare takes two folders"
        fi
        ;;
    esac
    shift
  done
  [[ -n $a && -n $b ]] || usage_error "usage: bench/run.sh compare DIR_A DIR_B [--threshold 10%]"
  threshold=${threshold%\%}
  [[ $threshold =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_error "--threshold expects a percentage (e.g. 10%)"
  dir_a=$(results_folder "$a") || usage_error "compare: $a is not a results folder (no runs.tsv)"
  dir_b=$(results_folder "$b") || usage_error "compare: $b is not a results folder (no runs.tsv)"
  echo "Compare: A = $dir_a, B = $dir_b; threshold ${threshold}%."
  echo "Each cell: median A → median B (change). \"regression\": the median moved the wrong way by"
  echo "more than the threshold and the ranges (min..max over repetitions) do not overlap; where"
  echo "both runs have the constant reference, req/s and latency are judged net of its change (the"
  echo "machine's drift), p99 against twice the threshold, and upstream calls only when they moved"
  echo "by at least 1 per 1,000 requests."
  echo
  awk -F'\t' -v threshold="$threshold" -f - "$dir_a/runs.tsv" "$dir_b/runs.tsv" <<'AWK' || status=$?
function isnum(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
# Sorts v[1..n] in place (few values: insertion sort).
function sortv(v, n,   i, j, t) {
  for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
}
# Sets MED, LO, HI for file f, row key k, metric m; returns the number of values.
function stats(f, k, m,   n, i, v) {
  n = cnt[f, k, m] + 0
  if (n == 0) return 0
  for (i = 1; i <= n; i++) v[i] = val[f, k, m, i]
  sortv(v, n)
  MED = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  LO = v[1]; HI = v[n]
  return n
}
function show(x, m) {
  if (m == "rps") return sprintf("%.0f", x)
  if (m == "p50_us" || m == "p99_us") return sprintf("%.3f", x / 1000)
  if (m == "peak_rss_kb") return sprintf("%.1f", x / 1024)
  if (m == "upstream_per_1k") return sprintf("%.4g", x)
  return sprintf("%.0f", x)
}
BEGIN {
  nm = split("rps p50_us p99_us errors upstream_per_1k peak_rss_kb", M, " ")
  split("req/s|p50 ms|p99 ms|errors|upstream / 1k req|peak RSS MiB", NAME, "|")
  better["rps"] = 1  # higher is better; every other metric: lower is better
  bad_header = 0
}
FNR == 1 {
  f = (NR == 1) ? 1 : 2
  for (i in col) delete col[i]
  for (i = 1; i <= NF; i++) col[$i] = i
  if (!("scenario" in col) || !("system" in col) || !("rps" in col)) bad_header = 1
  next
}
{
  th = ("threads" in col) ? $col["threads"] : ""
  k = $col["scenario"] SUBSEP $col["system"] SUBSEP ($col["scenario"] ~ /^scaling/ ? th : "")
  if (!((f, k) in seen)) { seen[f, k] = 1; if (f == 1) order[++nk] = k }
  runs[f, k]++
  for (i = 1; i <= nm; i++) {
    if (!(M[i] in col)) continue
    x = $col[M[i]]
    # From the counts when runs.tsv has them: older files rounded this column to 0.1.
    if (M[i] == "upstream_per_1k" && ("upstream_calls" in col) && ("all_responses" in col) &&
        isnum($col["upstream_calls"]) && isnum($col["all_responses"]) && $col["all_responses"] > 0)
      x = $col["upstream_calls"] * 1000 / $col["all_responses"]
    if (isnum(x)) val[f, k, M[i], ++cnt[f, k, M[i]]] = x + 0
  }
}
END {
  if (bad_header) { print "runs.tsv without the scenario, system and rps columns" > "/dev/stderr"; exit 3 }
  # The machine's drift between the runs, per scenario: how the constant reference moved (it
  # does no cache work, so its change is the machine's, not the code's).
  for (r = 1; r <= nk; r++) {
    k = order[r]
    split(k, part, SUBSEP)
    if (part[2] != "constant" || !((2, k) in seen)) continue
    for (i = 1; i <= 3; i++) {
      m = M[i]
      if (!stats(1, k, m)) continue
      ma = MED
      if (!stats(2, k, m) || ma <= 0 || MED <= 0) continue
      drift[part[1], m] = MED / ma
    }
  }
  rows = 0; regressions = 0
  for (r = 1; r <= nk; r++) {
    k = order[r]
    if (!((2, k) in seen)) continue
    split(k, part, SUBSEP)
    if (rows++ == 0) {
      printf "| scenario | system | runs A / B |"
      for (i = 1; i <= nm; i++) printf " %s |", NAME[i]
      print " verdict |"
      printf "|---|---|---:|"
      for (i = 1; i <= nm; i++) printf "---:|"
      print "---|"
    }
    worse = ""; improved = ""
    line = sprintf("| %s%s | %s | %d / %d |", part[1], part[3] != "" ? " (N=" part[3] ")" : "", part[2], runs[1, k], runs[2, k])
    for (i = 1; i <= nm; i++) {
      m = M[i]
      if (!stats(1, k, m)) { line = line " - |"; continue }
      ma = MED; la = LO; ha = HI
      if (!stats(2, k, m)) { line = line " - |"; continue }
      mb = MED; lb = LO; hb = HI
      if (ma != 0) { pct = (mb - ma) * 100 / ma; change = sprintf("%+.1f%%", pct) }
      else if (mb == 0) { pct = 0; change = "±0%" }
      else { pct = 1e9; change = "from 0" }
      line = line sprintf(" %s → %s (%s) |", show(ma, m), show(mb, m), change)
      overlap = !(hb < la || lb > ha)
      if (overlap) continue
      if (part[2] == "constant") continue  # the reference: its change is the drift
      if ((part[1], m) in drift && ma > 0) pct = (mb / ma / drift[part[1], m] - 1) * 100
      if (m == "upstream_per_1k" && (mb - ma < 1 && ma - mb < 1)) continue
      # A tail rests on few samples and moves most with the machine: twice the threshold.
      limit = (m == "p99_us") ? 2 * threshold : threshold
      wrong = (m in better) ? (pct < -limit) : (pct > limit)
      right = (m in better) ? (pct > limit) : (pct < -limit)
      if (wrong) worse = worse (worse == "" ? "" : ", ") NAME[i]
      else if (right) improved = improved (improved == "" ? "" : ", ") NAME[i]
    }
    if (part[2] == "constant" && ((part[1], "rps") in drift)) verdict = "reference: the machine's drift"
    else if (worse != "") { verdict = "**regression**: " worse; regressions++ }
    else if (improved != "") verdict = "improvement: " improved
    else verdict = "within noise"
    if (part[2] != "constant" && ((part[1], "rps") in drift)) verdict = verdict " (net of the reference)"
    print line " " verdict " |"
  }
  if (rows == 0) { print "no scenario and system in both folders" > "/dev/stderr"; exit 3 }
  print ""
  if (regressions) printf "%d regression(s).\n", regressions
  else print "No regression."
  exit regressions ? 1 : 0
}
AWK
  case $status in
    0 | 1) exit "$status" ;;
    3) exit 2 ;;
    *) die "compare failed (awk exit $status)" ;;
  esac
}
if [[ ${1:-} == compare ]]; then
  shift
  compare_main "$@"
fi
if [[ ${1:-} == soak ]]; then  # bench/soak.sh: a long run under faults, judged on growth
  shift
  exec "$BENCH_DIR/soak.sh" "$@"
fi
if [[ ${1:-} == refresh-day ]]; then  # bench/refresh-day.py: the daily refresh boundary under load
  shift
  exec python3 "$BENCH_DIR/refresh-day.py" "$@"
fi

# ----------------------------------------------------------------------------- arguments
SCENARIO_ARG=""
COMPARE=0
SYSTEMS_ARG=""
DURATION=""
WARMUP=""
REPS=""
GATEWAY_THREADS=1
CONNECTIONS=""
BENCH_THREADS=""
MAX_THREADS=""
CLIENT_CPUS=""
BUILD_DIR="$ROOT/build"
BUILD=1
INSTALL=1
JOBS=2
FAIL_IF=""
OUT=""
PUBLISH=0
ORIGINAL_ARGS="$*"
while (($#)); do
  case "$1" in
    --compare) COMPARE=1 ;;
    --systems) SYSTEMS_ARG=${2:?}; shift ;;
    --duration) DURATION=${2:?}; shift ;;
    --warmup) WARMUP=${2:?}; shift ;;
    --reps) REPS=${2:?}; shift ;;
    --gateway-threads) GATEWAY_THREADS=${2:?}; shift ;;
    --connections) CONNECTIONS=${2:?}; shift ;;
    --bench-threads) BENCH_THREADS=${2:?}; shift ;;
    --max-threads) MAX_THREADS=${2:?}; shift ;;
    --client-cpus) CLIENT_CPUS=${2:?}; shift ;;
    --build-dir) BUILD_DIR=${2:?}; shift ;;
    --no-build) BUILD=0 ;;
    --no-install) INSTALL=0 ;;
    --jobs) JOBS=${2:?}; shift ;;
    --fail-if) FAIL_IF=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    --publish) PUBLISH=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) usage >&2; usage_error "unknown option $1" ;;
    *)
      [[ -z $SCENARIO_ARG ]] || usage_error "one scenario (or all) at a time"
      SCENARIO_ARG=$1
      ;;
  esac
  shift
done
[[ -n $SCENARIO_ARG ]] || { usage >&2; exit 2; }
[[ $REPS =~ ^[0-9]*$ ]] || usage_error "--reps expects a number"
[[ $GATEWAY_THREADS =~ ^[1-9][0-9]*$ ]] || usage_error "--gateway-threads expects a number"
[[ $CONNECTIONS =~ ^([1-9][0-9]*)?$ ]] || usage_error "--connections expects a number"
[[ $BENCH_THREADS =~ ^([1-9][0-9]*)?$ ]] || usage_error "--bench-threads expects a number"
[[ $MAX_THREADS =~ ^([1-9][0-9]*)?$ ]] || usage_error "--max-threads expects a number"
[[ $CLIENT_CPUS =~ ^([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?$ ]] ||
  usage_error "--client-cpus expects a CPU list (e.g. 1 or 8-15 or 2,4-7)"

SCENARIO_FILES=()
if [[ $SCENARIO_ARG == all ]]; then
  for s in "${ALL_SCENARIOS[@]}"; do SCENARIO_FILES+=("$BENCH_DIR/scenarios/$s.toml"); done
elif [[ -f $SCENARIO_ARG ]]; then
  SCENARIO_FILES+=("$(cd "$(dirname "$SCENARIO_ARG")" && pwd)/$(basename "$SCENARIO_ARG")")
elif [[ -f $BENCH_DIR/scenarios/$SCENARIO_ARG.toml ]]; then
  SCENARIO_FILES+=("$BENCH_DIR/scenarios/$SCENARIO_ARG.toml")
else
  usage_error "no scenario $SCENARIO_ARG (have: ${ALL_SCENARIOS[*]})"
fi

if [[ -n $SYSTEMS_ARG ]]; then
  IFS=',' read -r -a SYSTEMS <<<"$SYSTEMS_ARG"
elif ((COMPARE)); then
  SYSTEMS=(gateway nginx varnish static constant)
else
  SYSTEMS=(gateway)
fi
for s in "${SYSTEMS[@]}"; do
  case "$s" in gateway | nginx | varnish | static | constant) ;; *) usage_error "unknown system $s" ;; esac
done
wants() { [[ " ${SYSTEMS[*]} " == *" $1 "* ]]; }
# The references serve fixed bodies: no cache, no upstream.
is_reference() { [[ $1 == constant || $1 == static ]]; }

# "500ms", "5s", "1.5s", "2m" → milliseconds.
to_ms() {
  awk -v d="$1" 'BEGIN {
    n = d; sub(/[a-z]+$/, "", n); u = substr(d, length(n) + 1)
    if (n !~ /^[0-9]+(\.[0-9]+)?$/) exit 1
    f = (u == "ms") ? 1 : (u == "s") ? 1000 : (u == "m") ? 60000 : (u == "h") ? 3600000 : -1
    if (f < 0) exit 1
    printf "%d\n", n * f + 0.5 }' || usage_error "bad duration $1"
}
[[ -z $DURATION ]] || to_ms "$DURATION" >/dev/null
[[ -z $WARMUP ]] || to_ms "$WARMUP" >/dev/null

# The run's folder: --out DIR, or bench/results/<UTC time>-<scenario|all>/ (a suffix when two
# runs start in the same second). It must not hold anything yet: a run never overwrites another.
run_epoch=$(date -u +%s)
RUN_STAMP=$(date -u -d "@$run_epoch" +%Y%m%dT%H%M%SZ)
RUN_START=$(date -u -d "@$run_epoch" +%Y-%m-%dT%H:%M:%SZ)
PUBLISHED_DIR="$BENCH_DIR/published"
if [[ -n $OUT ]]; then
  if [[ -e $OUT ]]; then
    [[ -d $OUT ]] || usage_error "--out $OUT is not a folder"
    [[ -z $(ls -A "$OUT") ]] || usage_error "--out $OUT is not empty (a run never overwrites another)"
  fi
  mkdir -p "$OUT"
  RESULTS_DIR=$(cd "$OUT" && pwd)
  [[ $RESULTS_DIR != "$PUBLISHED_DIR"* ]] || usage_error "--out must not be under bench/published/ (use --publish)"
else
  if [[ $SCENARIO_ARG == all ]]; then run_tag=all; else run_tag=$(basename "$SCENARIO_ARG" .toml); fi
  RESULTS_DIR="$BENCH_DIR/results/$RUN_STAMP-$run_tag"
  for ((i = 2; ; i++)); do
    mkdir -p "$BENCH_DIR/results"
    mkdir "$RESULTS_DIR" 2>/dev/null && break
    RESULTS_DIR="$BENCH_DIR/results/$RUN_STAMP-$run_tag-$i"
  done
fi
mkdir -p "$RESULTS_DIR/json"
log "results: $RESULTS_DIR"

# ----------------------------------------------------------------------------- tools and build
need_tools=(redis-server redis-cli curl taskset)
wants nginx && need_tools+=(nginx)
wants varnish && need_tools+=(varnishd)
need_tools+=(gnuplot)
missing=()
for t in "${need_tools[@]}"; do
  command -v "$t" >/dev/null 2>&1 || [[ -x /usr/sbin/$t ]] || missing+=("$t")
done
if ((${#missing[@]})); then
  if ((INSTALL)); then
    log "installing missing tools (${missing[*]}) with deploy/install-deps.sh --bench-tools"
    "$ROOT/deploy/install-deps.sh" --bench-tools
  else
    log "missing tools: ${missing[*]} (--no-install given)"
  fi
fi
export PATH="$PATH:/usr/sbin:/sbin"
command -v gnuplot >/dev/null 2>&1 && HAVE_GNUPLOT=1 || HAVE_GNUPLOT=0

# shellcheck source-path=SCRIPTDIR source=lib/build.sh
source "$BENCH_DIR/lib/build.sh"
BIN=$(release_binaries "$BUILD" "$BUILD_DIR" "$JOBS")

# ----------------------------------------------------------------------------- CPU pinning
NCPU=$(nproc)
CLOCK_TICKS=$(getconf CLK_TCK)
if ((NCPU >= 2)); then
  SERVER_CPUS=0
  OTHER_CPUS=$([[ $NCPU -eq 2 ]] && echo 1 || echo "1-$((NCPU - 1))")
  SERVER_PIN=(taskset -c "$SERVER_CPUS")
  OTHER_PIN=(taskset -c "$OTHER_CPUS")
  PIN_NOTE="the system under test is pinned to CPU $SERVER_CPUS; wg-bench, the stub and redis-server to CPU(s) $OTHER_CPUS (taskset)"
else
  SERVER_PIN=()
  OTHER_PIN=()
  PIN_NOTE="one CPU: nothing is pinned, load generator and server share it"
fi
log "$NCPU CPUs: $PIN_NOTE"
DEFAULT_SERVER_PIN=("${SERVER_PIN[@]}")
DEFAULT_OTHER_PIN=("${OTHER_PIN[@]}")

# A taskset CPU list ("1", "8-15", "2,4-7") → how many CPUs it names.
cpu_count() {
  local n=0 part parts
  IFS=',' read -r -a parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then n=$((n + ${part#*-} - ${part%-*} + 1)); else n=$((n + 1)); fi
  done
  echo "$n"
}

# Scaling scenarios: the server with N threads (workers) runs on CPUs 0..N-1; wg-bench, the stub
# and redis-server on the CPUs above the largest N, or on the last CPU when the sweep covers every
# CPU (the largest N then shares that CPU with the load generator).
is_sweep() { [[ $1 == scaling || $1 == scaling-* ]]; }
MAX_THREADS=${MAX_THREADS:-$NCPU}
((NCPU >= 2)) || CLIENT_CPUS=""  # one CPU: nothing is pinned
if [[ -z $CLIENT_CPUS ]] && ((NCPU >= 2)); then
  if ((MAX_THREADS < NCPU - 1)); then
    CLIENT_CPUS="$MAX_THREADS-$((NCPU - 1))"
  elif ((MAX_THREADS == NCPU - 1)); then
    CLIENT_CPUS=$MAX_THREADS
  else
    CLIENT_CPUS=$((NCPU - 1))
  fi
fi
if [[ -n $CLIENT_CPUS ]]; then
  SWEEP_OTHER_PIN=(taskset -c "$CLIENT_CPUS")
  SWEEP_BENCH_THREADS=${BENCH_THREADS:-$(cpu_count "$CLIENT_CPUS")}
  FIRST_CLIENT_CPU=$(awk -F'[,-]' '{ m = $1; for (i = 2; i <= NF; i++) if ($i + 0 < m + 0) m = $i; print m }' <<<"$CLIENT_CPUS")
else
  SWEEP_OTHER_PIN=()
  SWEEP_BENCH_THREADS=${BENCH_THREADS:-1}
  FIRST_CLIENT_CPU=""
fi
# server_cpus N → the CPU list of a server with N threads (all CPUs when N exceeds them).
server_cpus() {
  local n=$(($1 < NCPU ? $1 : NCPU))
  if ((n > 1)); then echo "0-$((n - 1))"; else echo 0; fi
}
if ((NCPU >= 2)); then
  SWEEP_PIN_NOTE="scaling: the server with N threads (workers) is pinned to CPUs 0..N-1; wg-bench ($SWEEP_BENCH_THREADS thread(s)), the stub and redis-server to CPU(s) $CLIENT_CPUS (taskset)"
  if [[ -n $FIRST_CLIENT_CPU ]] && ((FIRST_CLIENT_CPU < MAX_THREADS)); then
    SWEEP_PIN_NOTE+="; from N = $((FIRST_CLIENT_CPU + 1)) on the server shares CPU $FIRST_CLIENT_CPU with the load generator"
  fi
else
  SWEEP_PIN_NOTE="scaling: one CPU, nothing is pinned"
fi

# ----------------------------------------------------------------------------- processes
WORK=$(mktemp -d "${TMPDIR:-/tmp}/wg-bench-run.XXXXXX")
PIDS=()
LAST_PID=""
# shellcheck source-path=SCRIPTDIR source=lib/processes.sh
source "$BENCH_DIR/lib/processes.sh"
stop_all_on_exit

# --- redis-server
REDIS_PID=""
REDIS_PORT=""
start_redis() {
  [[ -n $REDIS_PORT ]] || REDIS_PORT=$(free_port)
  mkdir -p "$WORK/redis"
  for _ in 1 2 3; do
    start_bg "$WORK/redis.log" "${OTHER_PIN[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
      --save "" --appendonly no --dir "$WORK/redis" --protected-mode yes
    REDIS_PID=$LAST_PID
    wait_port "$REDIS_PORT" && return 0
    tail -n 5 "$WORK/redis.log" >&2
    stop_pid "$REDIS_PID"
    sleep 0.5
  done
  die "redis-server did not start on port $REDIS_PORT"
}
stop_redis() {
  stop_pid "$REDIS_PID"
  REDIS_PID=""
}

# --- stub upstream
STUB_PID=""
STUB_PORT=""
# The stub renders its whole data set before it listens (about 6 s and 1.1 GiB for 10,000
# widgets): rendered on first access instead, with its default 512 MiB cache, it re-rendered
# evicted widgets all run long, on the CPU it shares with wg-bench, and the first system of a
# scenario paid for rendering that the next ones found done.
start_stub() {
  local widgets=$1
  start_bg "$WORK/stub.log" "${OTHER_PIN[@]}" "$BIN/widget-upstream-stub" --listen 127.0.0.1:0 \
    --widgets "$widgets" --seed 1 --cache-mb 2048 --prerender
  STUB_PID=$LAST_PID
  STUB_PORT=$(listen_port "$WORK/stub.log" stub "$STUB_PID" 1200) || die "the stub did not start"
}
stub_reset() {
  local latency_ms=$1
  http -X POST "http://127.0.0.1:$STUB_PORT/__stub/reset" >/dev/null
  if ((latency_ms > 0)); then
    http -X POST "http://127.0.0.1:$STUB_PORT/__stub/latency?ms=$latency_ms" >/dev/null
  fi
}
stub_total() {
  http "http://127.0.0.1:$STUB_PORT/__stub/stats" | sed -n 's/.*"total":\([0-9]*\).*/\1/p'
}

# --- systems under test; each start_* sets SERVER_PID and SERVER_PORT
SERVER_PID=""
SERVER_PORT=""

ADMIN_PORT=""
start_gateway() {  # TTL_MS THREADS
  local ttl_ms=$1 threads=$2 conf="$WORK/gateway.toml"
  {
    echo "# Written by bench/run.sh. Access logging off, as for nginx and Varnish."
    echo "[log]"
    echo 'access_log = "off"'
    echo "[cache]"
    if ((ttl_ms > 0)); then
      echo "min_ttl = \"${ttl_ms}ms\""
      echo "max_ttl = \"${ttl_ms}ms\""
      echo 'jitter = "0s"'
    fi
    ((${S[gateway_l1]:-1})) || echo "l1_max_bytes = 0"
    ((${S[derive_pages]:-1})) || echo "derive_pages = false"
    echo "[access]"
    echo "# The load generator is one client address asking for many widgets nobody has fetched"
    echo "# yet (all valid): the per-client limit on such lookups would measure itself."
    echo "unknown_per_ip_rate = 0"
  } >"$conf"
  start_redis
  start_bg "$WORK/gateway.log" "${SERVER_PIN[@]}" "$BIN/widget-gateway" --config "$conf" \
    --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --upstream "http://127.0.0.1:$STUB_PORT" \
    --redis "redis://127.0.0.1:$REDIS_PORT/0" --threads "$threads"
  SERVER_PID=$LAST_PID
  SERVER_PORT=$(listen_port "$WORK/gateway.log" public "$SERVER_PID") || die "the gateway did not start"
  ADMIN_PORT=$(listen_port "$WORK/gateway.log" admin "$SERVER_PID") || die "the gateway's admin listener did not start"
}

# Commands redis-server has processed so far ("?" when it does not answer).
redis_commands() {
  { redis-cli -p "$REDIS_PORT" INFO stats 2>/dev/null || true; } | tr -d '\r' |
    awk -F: '$1 == "total_commands_processed" { print $2; found = 1 } END { if (!found) print "?" }'
}

# A sample's value from the gateway's /metrics ("?" when absent).
gateway_metric() {
  { http "http://127.0.0.1:$ADMIN_PORT/metrics" || true; } |
    awk -v name="$1" '$1 == name { print $2; found = 1; exit } END { if (!found) print "?" }'
}

# What both nginx systems' configurations share, up to the open http block: one process tree
# kept under DIR, access log off, long keep-alive. nginx_conf_head DIR WORKERS WHAT
nginx_conf_head() {
  local dir=$1
  echo "# Written by bench/run.sh: $3."
  # As root, nginx would switch its worker to an account that cannot write under DIR.
  [[ $(id -u) -ne 0 ]] || echo "user $(id -un) $(id -gn);"
  cat <<EOF
worker_processes $2;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
worker_rlimit_nofile 40000;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
EOF
}

start_nginx() {  # TTL_MS WORKERS [reuseport]
  local ttl_ms=$1 workers=$2 reuseport=${3:+ reuseport} dir="$WORK/nginx" ttl
  ttl=$((ttl_ms > 0 ? (ttl_ms + 999) / 1000 : 3600))s  # proxy_cache_valid takes whole seconds
  rm -rf "$dir"
  mkdir -p "$dir/cache" "$dir/tmp"
  SERVER_PORT=$(free_port)
  {
    nginx_conf_head "$dir" "$workers" "nginx proxy_cache as an equivalent cache in front of the stub"
    cat <<EOF
  proxy_cache_path $dir/cache levels=1:2 keys_zone=wg:32m max_size=1g inactive=1d use_temp_path=off;
  upstream stub {
    server 127.0.0.1:$STUB_PORT;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$SERVER_PORT backlog=4096$reuseport;
    location /api/v1/widgets/widget/ {
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 2s;
      proxy_read_timeout 10s;
      proxy_cache wg;
      proxy_cache_key \$request_uri;
      proxy_cache_valid 200 $ttl;
      proxy_cache_valid 400 404 5m;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 10s;
      proxy_cache_lock_age 10s;
      proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
      proxy_cache_background_update on;
      add_header X-Cache-Status \$upstream_cache_status always;
    }
    location / { return 404; }
  }
}
EOF
  } >"$dir/nginx.conf"
  start_bg "$WORK/nginx.log" "${SERVER_PIN[@]}" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  SERVER_PID=$LAST_PID
  wait_port "$SERVER_PORT" || { cat "$dir/error.log" >&2; die "nginx did not start"; }
}

start_varnish() {
  local ttl_ms=$1 dir="$WORK/varnish" ttl
  ttl=$((ttl_ms > 0 ? ttl_ms : 3600000))ms
  rm -rf "$dir"
  mkdir -p "$dir"
  SERVER_PORT=$(free_port)
  cat >"$dir/bench.vcl" <<EOF
vcl 4.1;
# Written by bench/run.sh: Varnish as an equivalent cache in front of the stub.
backend stub {
  .host = "127.0.0.1";
  .port = "$STUB_PORT";
  .connect_timeout = 2s;
  .first_byte_timeout = 10s;
  .between_bytes_timeout = 10s;
}
sub vcl_recv {
  if (req.url !~ "^/api/v1/widgets/widget/") { return (synth(404)); }
  if (req.method != "GET" && req.method != "HEAD") { return (pass); }
  unset req.http.Cookie;
  return (hash);
}
sub vcl_backend_response {
  if (beresp.status == 200) {
    set beresp.ttl = $ttl;
    set beresp.grace = 24h;  # stale while revalidating, and kept when a refresh fails
  } elsif (beresp.status == 400 || beresp.status == 404) {
    set beresp.ttl = 5m;
  } else {
    if (bereq.is_bgfetch) { return (abandon); }  # keep serving the stale copy
    set beresp.ttl = 0s;
    set beresp.uncacheable = true;
  }
  return (deliver);
}
sub vcl_backend_error {
  if (bereq.is_bgfetch) { return (abandon); }
}
sub vcl_deliver {
  if (obj.hits > 0) { set resp.http.X-Cache = "hit"; } else { set resp.http.X-Cache = "miss"; }
}
EOF
  start_bg "$WORK/varnish.log" "${SERVER_PIN[@]}" varnishd -F -j none -n "$dir/state" \
    -a "127.0.0.1:$SERVER_PORT" -T none -f "$dir/bench.vcl" -s malloc,256m
  SERVER_PID=$LAST_PID
  wait_port "$SERVER_PORT" || { cat "$WORK/varnish.log" >&2; die "varnishd did not start"; }
}

# nginx serving the constant server's two bodies as static files (sendfile, open_file_cache):
# what the best web server does with bytes already on disk, the bar for a cache's hit path.
start_static() {
  local dir="$WORK/static"
  rm -rf "$dir"
  mkdir -p "$dir/files" "$dir/tmp"
  cp "$WORK/constant.body" "$dir/files/widget.json"
  cp "$WORK/constant-reviews.body" "$dir/files/reviews.json"
  SERVER_PORT=$(free_port)
  {
    nginx_conf_head "$dir" 1 "nginx serving the constant bodies as static files"
    cat <<EOF
  sendfile on;
  tcp_nopush on;
  open_file_cache max=16 inactive=60s;
  default_type application/json;
  server {
    listen 127.0.0.1:$SERVER_PORT backlog=4096;
    root $dir/files;
    location ~ ^/api/v1/widgets/widget/[^/]+/reviews/remote\$ { try_files /reviews.json =404; }
    location ~ ^/api/v1/widgets/widget/[^/]+/remote\$ { try_files /widget.json =404; }
    location / { return 404; }
  }
}
EOF
  } >"$dir/nginx.conf"
  start_bg "$WORK/static.log" "${SERVER_PIN[@]}" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  SERVER_PID=$LAST_PID
  wait_port "$SERVER_PORT" || { cat "$dir/error.log" >&2; die "nginx (static) did not start"; }
}

start_constant() {
  start_bg "$WORK/constant.log" "${SERVER_PIN[@]}" "$BIN/wg-bench" --serve-constant \
    --listen 127.0.0.1:0 --body-file "$WORK/constant.body" \
    --reviews-body-file "$WORK/constant-reviews.body"
  SERVER_PID=$LAST_PID
  SERVER_PORT=$(listen_port "$WORK/constant.log" constant "$SERVER_PID") || die "the constant server did not start"
}

stop_server() {
  stop_pid "$SERVER_PID"
  SERVER_PID=""
  stop_redis
}

# ----------------------------------------------------------------------------- one run
RUNS="$RESULTS_DIR/runs.tsv"
# exit: wg-bench's exit status (0 ok, 1 runtime error, 2 usage error, 3 connection failure, 4 no
# measured request got an expected answer, 5 a --fail-if threshold was crossed); the figures of
# a run whose wg-bench printed none are "-".
printf 'scenario\tsystem\trep\trps\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\terrors\tunexpected\tall_responses\tupstream_calls\tupstream_per_1k\tpeak_rss_kb\tredis_per_request\tl1_entries\tl1_bytes\tthreads\texit\tvisitors_p99_us\twalker_responses\twalker_share\twalker_p99_us\tserver_cpu_ms_per_1k\n' >"$RUNS"
FAILED_RUNS=()     # "scenario system run N: exit C (meaning)" of every run whose wg-bench failed
THRESHOLD_RUNS=()  # the same for the gateway's runs that crossed --fail-if (exit 5)
exit_meaning() {
  case "$1" in
    1) echo "runtime error" ;;
    2) echo "usage error" ;;
    3) echo "connection failure" ;;
    4) echo "no measured request got an expected answer" ;;
    5) echo "--fail-if threshold crossed" ;;
    *) echo "unexpected exit status" ;;
  esac
}

# Sleeps until `ms` milliseconds after the epoch-ms value `since`.
sleep_until() {
  local since=$1 ms=$2 now
  now=$(date +%s%3N)
  local left=$((since + ms - now))
  ((left <= 0)) || sleep "$(awk -v l="$left" 'BEGIN { printf "%.3f", l / 1000 }')"
}

# run_one SCENARIO_FILE SYSTEM REP THREADS: THREADS is the server's thread (gateway) or worker
# (nginx) count, "-" for Varnish (its own thread pools). On a scaling scenario the server is
# pinned to THREADS CPUs and nginx listens with reuseport, as the gateway's acceptors do.
run_one() {
  local file=$1 system=$2 rep=$3 threads=$4
  local name=${S[name]} sweep=0 bench_threads=$BENCH_THREADS
  local out="$RESULTS_DIR/json/$name-$system-$rep.json"
  if is_sweep "$name"; then
    sweep=1
    out="$RESULTS_DIR/json/$name-$system-t$threads-$rep.json"
    bench_threads=$SWEEP_BENCH_THREADS
    SERVER_PIN=()
    ((NCPU < 2)) || SERVER_PIN=(taskset -c "$(server_cpus "$threads")")
  fi
  stub_reset "${S[upstream_latency_ms]}"
  case "$system" in
    gateway) start_gateway "${S[cache_ttl_ms]}" "$threads" ;;
    nginx) start_nginx "${S[cache_ttl_ms]}" "$threads" "$([[ $sweep == 1 ]] && echo reuseport)" ;;
    varnish) start_varnish "${S[cache_ttl_ms]}" ;;
    static) start_static ;;
    constant) start_constant ;;
  esac
  SERVER_PIN=("${DEFAULT_SERVER_PIN[@]}")
  if ((sweep)); then
    log "$name: $system with $threads $([[ $system == nginx ]] && echo worker || echo thread)(s) (run $rep) on 127.0.0.1:$SERVER_PORT"
  else
    log "$name: $system (run $rep) on 127.0.0.1:$SERVER_PORT"
  fi
  local args=(--target "http://127.0.0.1:$SERVER_PORT" --scenario "$file" --ids "$WORK/ids.json"
    --label "$system" --out "$out" --seed "$rep" --tsv)
  [[ -z $DURATION ]] || args+=(--duration "$DURATION")
  [[ -z $WARMUP ]] || args+=(--warmup "$WARMUP")
  [[ -z $CONNECTIONS ]] || args+=(--connections "$CONNECTIONS")
  [[ -z $bench_threads ]] || args+=(--threads "$bench_threads")
  [[ -z $FAIL_IF || $system != gateway ]] || args+=(--fail-if "$FAIL_IF")
  local started redis_before="?" cpu_before
  started=$(date +%s%3N)
  "${OTHER_PIN[@]}" "$BIN/wg-bench" "${args[@]}" >"$WORK/tsv" &
  local bench_pid=$!
  PIDS+=("$bench_pid")
  # The server's CPU time and (the gateway's) Redis commands are counted over the measured period.
  sleep_until "$started" "$WARMUP_MS"
  cpu_before=$(tree_cpu_ticks "$SERVER_PID")
  [[ $system != gateway ]] || redis_before=$(redis_commands)

  # Faults, timed from the start of the measured period.
  local fault_note=""
  if [[ ${S[fault]} == upstream && $system != constant ]]; then
    sleep_until "$started" $((WARMUP_MS + FAULT_AT_MS))
    http -X POST "http://127.0.0.1:$STUB_PORT/__stub/fault?mode=${S[fault_mode]}" >/dev/null
    sleep_until "$started" $((WARMUP_MS + FAULT_AT_MS + FAULT_FOR_MS))
    http -X POST "http://127.0.0.1:$STUB_PORT/__stub/fault?mode=none" >/dev/null
    fault_note="upstream ${S[fault_mode]} from ${FAULT_AT_MS} ms for ${FAULT_FOR_MS} ms"
  elif [[ ${S[fault]} == redis && $system == gateway ]]; then
    sleep_until "$started" $((WARMUP_MS + FAULT_AT_MS))
    stop_redis
    sleep_until "$started" $((WARMUP_MS + FAULT_AT_MS + FAULT_FOR_MS))
    start_redis
    fault_note="redis-server killed at ${FAULT_AT_MS} ms, restarted after ${FAULT_FOR_MS} ms"
  fi
  local bench_status=0 cpu_ms
  wait "$bench_pid" || bench_status=$?
  cpu_ms=$((($(tree_cpu_ticks "$SERVER_PID") - cpu_before) * 1000 / CLOCK_TICKS))
  forget_pid "$bench_pid"
  [[ -z $fault_note ]] || log "$name: $system: $fault_note"

  local upstream rss line redis_used="-" l1_entries="-" l1_bytes="-"
  upstream=$(stub_total)
  rss=$(peak_rss_kb "$SERVER_PID")
  if [[ $system == gateway ]]; then
    # The INFO call itself counts as one command; a restarted Redis (redis-outage) lost the count.
    local redis_after
    redis_after=$(redis_commands)
    if [[ $redis_before != "?" && $redis_after != "?" && ${S[fault]} != redis ]]; then
      redis_used=$((redis_after - redis_before - 1))
    fi
    # Whatever the gateway did after the measured period (finishing fills) counts too: the
    # figure errs on the high side.
    l1_entries=$(gateway_metric 'wg_cache_entries{tier="l1"}')
    l1_bytes=$(gateway_metric 'wg_cache_bytes{tier="l1"}')
    # Less the body files L1 charges, which live outside RSS: RSS − L1 compares like with like.
    if [[ $l1_bytes != "?" ]]; then
      l1_bytes=$(awk -v b="$l1_bytes" -v f="$(body_file_bytes "$SERVER_PID")" \
        'BEGIN { printf "%.0f", b - f }')
    fi
  fi
  stop_server
  if ((bench_status != 0)); then
    local what
    what="$name $system run $rep$( ((sweep == 0)) || echo " (N=$threads)"): exit $bench_status ($(exit_meaning "$bench_status"))"
    log "$what"
    if ((bench_status == 5)); then THRESHOLD_RUNS+=("$what"); else FAILED_RUNS+=("$what"); fi
  fi
  ! is_reference "$system" || upstream=0
  # wg-bench prints a header line, then its data line: the last line, when it is not the header
  # (a usage or runtime error prints neither). Its first 12 columns: label responses rps p50 p90
  # p99 p999 max errors unexpected all bytes; then mode offered late unsent exit (not read here)
  # and the roles: visitors' p99, the walker's answers and its p99.
  line=$(tail -n 1 "$WORK/tsv")
  if [[ $line == label$'\t'* ]] || (($(awk -F'\t' '{ print NF }' <<<"$line") < 20)); then
    line=$(printf 'x%.0s\t' {1..20})  # no figures: "-" below
  fi
  awk -F'\t' -v OFS='\t' -v sc="$name" -v rep="$rep" -v up="${upstream:-0}" -v rss="$rss" \
    -v redis="$redis_used" -v l1e="$l1_entries" -v l1b="$l1_bytes" -v sy="$system" -v th="$threads" \
    -v code="$bench_status" -v cpu="$cpu_ms" '{
      if ($1 == "x") {
        print sc, sy, rep, "-", "-", "-", "-", "-", "-", "-", "-", "-", up, "-", rss, "-", l1e, l1b, th, code, "-", "-", "-", "-", "-"
        next
      }
      cpu_per = ($2 > 0) ? sprintf("%.4g", cpu * 1000 / $2) : "-"
      per = ($11 > 0) ? sprintf("%.4g", up * 1000 / $11) : "-"
      redis_per = (redis == "-" || $2 == 0) ? "-" : sprintf("%.4f", redis / $2)
      walker_share = ($2 > 0) ? sprintf("%.4f", $19 / $2) : "-"
      print sc, sy, rep, $3, $4, $5, $6, $7, $8, $9, $10, $11, up, per, rss, redis_per, l1e, l1b, th, code, $18, $19, walker_share, $20, cpu_per
    }' <<<"$line" >>"$RUNS"
}

# ----------------------------------------------------------------------------- all runs
# The constant server answers with bytes of real upstream answers, as large as what the scenario
# asks for on average: from the first SAMPLE_REQUESTS requests of the scenario's pool, the valid
# ones (200 from the stub) are fetched once; the widget data and the reviews page closest to the
# mean size of each kind are served. A kind absent from the sample falls back to the first
# widget's data, or its first page of the scenario's first limit.
SAMPLE_REQUESTS=300
constant_bodies() {
  local file=$1 first_id chosen
  first_id=$(awk -F'"id":"' 'NR == 1 { split($2, a, "\""); print a[1]; exit }' "$WORK/ids.json")
  [[ -n $first_id ]] || die "the stub listed no widgets"
  "$BIN/wg-bench" --scenario "$file" --ids "$WORK/ids.json" --print-requests "$SAMPLE_REQUESTS" |
    awk '$1 == "GET" && $2 ~ /^\/api\/v1\/widgets\/widget\/[A-Za-z0-9._~-]+\/(reviews\/)?remote(\?[A-Za-z0-9._~%=&+,;:-]*)?$/ { print $2 }' \
      >"$WORK/sample.txt" || true
  : >"$WORK/sample.curl"
  while IFS= read -r target; do
    printf 'url = "http://127.0.0.1:%s%s"\noutput = "/dev/null"\n' "$STUB_PORT" "$target" >>"$WORK/sample.curl"
  done <"$WORK/sample.txt"
  : >"$WORK/sample.sizes"
  if [[ -s $WORK/sample.curl ]]; then
    curl -s --noproxy '*' --max-time 120 -K "$WORK/sample.curl" \
      -w '%{http_code}\t%{size_download}\t%{url_effective}\n' >"$WORK/sample.sizes" || true
  fi
  # "kind count mean_bytes closest_url" for each kind present among the 200s.
  chosen=$(awk -F'\t' '$1 == 200 {
      kind = ($3 ~ /\/reviews\/remote/) ? "reviews" : "widget"
      n[kind]++; sum[kind] += $2; size[kind, n[kind]] = $2; url[kind, n[kind]] = $3 }
    END { for (k in n) { mean = sum[k] / n[k]; best = 1
            for (i = 2; i <= n[k]; i++) if ((size[k, i] - mean) ^ 2 < (size[k, best] - mean) ^ 2) best = i
            printf "%s %d %.0f %s\n", k, n[k], mean, url[k, best] } }' "$WORK/sample.sizes")
  local widget_url reviews_url widget_note reviews_note
  widget_url=$(awk '$1 == "widget" { print $4 }' <<<"$chosen")
  reviews_url=$(awk '$1 == "reviews" { print $4 }' <<<"$chosen")
  widget_note=$(awk '$1 == "widget" { printf "mean of %d sampled widget answers %s bytes", $2, $3 }' <<<"$chosen")
  reviews_note=$(awk '$1 == "reviews" { printf "mean of %d sampled reviews pages %s bytes", $2, $3 }' <<<"$chosen")
  if [[ -z $widget_url ]]; then
    widget_url="http://127.0.0.1:$STUB_PORT/api/v1/widgets/widget/$first_id/remote"
    widget_note="no widget request in the sample: the first widget's data"
  fi
  if [[ -z $reviews_url ]]; then
    reviews_url="http://127.0.0.1:$STUB_PORT/api/v1/widgets/widget/$first_id/reviews/remote?limit=${S[first_limit]}&skip=0"
    reviews_note="no reviews request in the sample: the first widget's page of limit ${S[first_limit]}"
  fi
  http "$widget_url" >"$WORK/constant.body"
  http "$reviews_url" >"$WORK/constant-reviews.body"
  CONSTANT_WIDGET_BYTES=$(wc -c <"$WORK/constant.body")
  CONSTANT_REVIEWS_BYTES=$(wc -c <"$WORK/constant-reviews.body")
  CONSTANT_NOTE="widget data $CONSTANT_WIDGET_BYTES bytes ($widget_note), reviews page $CONSTANT_REVIEWS_BYTES bytes ($reviews_note)"
}

# The open-loop rate of a scenario file ("-" when it has none): [load] rate.
scenario_rate() {
  awk '/^\[/ { in_load = ($0 ~ /^\[load\]/) } in_load && /^rate *=/ { sub(/^rate *= */, ""); sub(/ *#.*/, ""); print; found = 1 }
    END { if (!found) print "-" }' "$1"
}

# A scenario with runner.baseline (quota-walk: zipf-site) has its baseline run first, in the same
# folder and with the same overrides, unless the run already has it: its report compares the two.
declare -A BASELINE_OF   # scenario name → its baseline's name
expanded=()
for file in "${SCENARIO_FILES[@]}"; do
  runner=$("$BIN/wg-bench" --scenario "$file" --print-runner)
  baseline=$(sed -n 's/^baseline=//p' <<<"$runner")
  if [[ -n $baseline ]]; then
    BASELINE_OF[$(sed -n 's/^name=//p' <<<"$runner")]=$baseline
    baseline_file="$BENCH_DIR/scenarios/$baseline.toml"
    [[ -f $baseline_file ]] || die "$file: runner.baseline names $baseline, but there is no $baseline_file"
    if [[ " ${SCENARIO_FILES[*]} ${expanded[*]} " != *" $baseline_file "* ]]; then
      log "$(basename "$file" .toml): its baseline $baseline runs first"
      expanded+=("$baseline_file")
    fi
  fi
  expanded+=("$file")
done
SCENARIO_FILES=("${expanded[@]}")

SCENARIOS="$RESULTS_DIR/scenarios.tsv"
printf 'scenario\tmode\tconnections\trate\tduration_ms\twarmup_ms\treps\tconstant_widget_bytes\tconstant_reviews_bytes\tconstant_note\n' >"$SCENARIOS"
declare -A S
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
SCENARIO_NAMES=()  # the scenarios of the per-scenario tables and plots
SWEEP_NAMES=()     # the scaling scenarios (their own table and plot)
for file in "${SCENARIO_FILES[@]}"; do
  S=()
  while IFS='=' read -r key value; do S[$key]=$value; done < <("$BIN/wg-bench" --scenario "$file" --print-runner)
  if is_sweep "${S[name]}"; then
    SWEEP_NAMES+=("${S[name]}")
    OTHER_PIN=("${SWEEP_OTHER_PIN[@]}")
    THREAD_POINTS=$(seq 1 "$MAX_THREADS")
  else
    SCENARIO_NAMES+=("${S[name]}")
    OTHER_PIN=("${DEFAULT_OTHER_PIN[@]}")
  fi
  DURATION_MS=$([[ -n $DURATION ]] && to_ms "$DURATION" || echo "${S[duration_ms]}")
  WARMUP_MS=$([[ -n $WARMUP ]] && to_ms "$WARMUP" || echo "${S[warmup_ms]}")
  FAULT_AT_MS=${S[fault_at_ms]}
  FAULT_FOR_MS=${S[fault_for_ms]}
  if ((FAULT_AT_MS + FAULT_FOR_MS > DURATION_MS)); then  # a shortened run keeps the fault inside
    FAULT_AT_MS=$((DURATION_MS * 3 / 10))
    FAULT_FOR_MS=$((DURATION_MS * 4 / 10))
  fi
  reps=${REPS:-${S[reps]}}

  if ((${S[requests]:-0} > 0)); then
    length_note="${S[requests]} requests"
  else
    length_note="${DURATION_MS} ms after ${WARMUP_MS} ms warm-up"
  fi
  if is_sweep "${S[name]}"; then
    log "=== ${S[name]}: ${reps} run(s) per system and thread count (1..$MAX_THREADS) of ${length_note}; systems: ${S[systems]:-${SYSTEMS[*]}}"
    log "$SWEEP_PIN_NOTE"
    ((MAX_THREADS <= NCPU)) || log "warning: --max-threads $MAX_THREADS is more than the $NCPU CPUs; points above $NCPU share them"
    ((GATEWAY_THREADS == 1)) || log "${S[name]}: --gateway-threads is ignored (the scenario sweeps 1..$MAX_THREADS)"
  else
    log "=== ${S[name]}: ${reps} run(s) per system of ${length_note}; systems: ${S[systems]:-${SYSTEMS[*]}}"
  fi
  start_stub "${S[stub_widgets]}"
  http "http://127.0.0.1:$STUB_PORT/__stub/widgets?limit=${S[widgets]}" >"$WORK/ids.json"
  if wants constant || wants static; then
    constant_bodies "$file"
  else
    CONSTANT_WIDGET_BYTES=- CONSTANT_REVIEWS_BYTES=- CONSTANT_NOTE=-
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${S[name]}" "${S[mode]}" "${CONNECTIONS:-${S[connections]}}" \
    "$(scenario_rate "$file")" "$DURATION_MS" "$WARMUP_MS" "$reps" "$CONSTANT_WIDGET_BYTES" \
    "$CONSTANT_REVIEWS_BYTES" "$CONSTANT_NOTE" >>"$SCENARIOS"
  # A scenario may be meant for some systems only (runner.systems): run those of SYSTEMS.
  scenario_systems=()
  for system in "${SYSTEMS[@]}"; do
    [[ -z ${S[systems]} || ",${S[systems]}," == *",$system,"* ]] && scenario_systems+=("$system")
  done
  ((${#scenario_systems[@]})) || log "${S[name]}: none of ${SYSTEMS[*]} is meant for it (runner.systems = ${S[systems]}); skipped"
  for ((rep = 1; rep <= reps; rep++)); do
    if is_sweep "${S[name]}"; then
      # Each repetition sweeps every thread count, alternating systems at each: drift over the
      # run hits every point and both systems alike.
      for threads in $THREAD_POINTS; do
        for system in "${scenario_systems[@]}"; do
          [[ $system == gateway || $system == nginx ]] || continue
          run_one "$file" "$system" "$rep" "$threads"
        done
      done
    else
      for system in "${scenario_systems[@]}"; do
        case "$system" in
          gateway) threads=$GATEWAY_THREADS ;;
          varnish) threads=- ;;
          *) threads=1 ;;
        esac
        run_one "$file" "$system" "$rep" "$threads"
      done
    fi
  done
  stop_pid "$STUB_PID"
done

# ----------------------------------------------------------------------------- report
# spread SCENARIO SYSTEM COLUMN [THREADS] → "median min max" over the runs' numeric values of
# COLUMN ("- - -" when runs exist but none has a number, "? ? ?" when there is no run); with
# THREADS, over the runs with that many server threads (workers) only.
spread() {
  awk -F'\t' -v sc="$1" -v sy="$2" -v col="$3" -v th="${4:-}" '
    NR > 1 && $1 == sc && $2 == sy && (th == "" || $19 == th) {
      rows++
      if ($col ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) v[++n] = $col + 0 }
    END {
      if (rows == 0) { print "? ? ?"; exit }
      if (n == 0) { print "- - -"; exit }
      for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "%.10g %.10g %.10g\n", m, v[1], v[n] }' "$RUNS"
}
median() {
  local m rest
  read -r m rest <<<"$(spread "$@")"
  echo "$m"
}
# The median of column $3, or $4 for a reference (which has no upstream).
median_unless_constant() {
  if is_reference "$2"; then echo "$4"; else median "$1" "$2" "$3"; fi
}
runs_of() {  # SCENARIO SYSTEM [THREADS]
  awk -F'\t' -v sc="$1" -v sy="$2" -v th="${3:-}" 'NR > 1 && $1 == sc && $2 == sy && (th == "" || $19 == th)' "$RUNS" | wc -l
}
# exits_of SCENARIO SYSTEM → wg-bench's exit statuses of its runs, in run order ("0,0,5").
exits_of() {
  awk -F'\t' -v sc="$1" -v sy="$2" 'NR > 1 && $1 == sc && $2 == sy { s = s (s == "" ? "" : ",") $20 } END { print s }' "$RUNS"
}
# Number formatting that passes "?" and "-" through.
num() { awk -v f="$1" -v v="$2" -v d="${3:-1}" 'BEGIN { if (v == "?" || v == "-") print v; else printf f "\n", v / d }'; }
ms() { num %.3f "$1" 1000; }
rps() { num %.0f "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "?" || b == "?" || a == "-" || b == "-" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
per_thread() { awk -v v="$1" -v n="$2" 'BEGIN { if (v == "?" || v == "-") print "-"; else printf "%.0f", v / n }'; }

# scaling_table SCENARIO: one row per thread count, medians over its runs.
scaling_table() {
  local sc=$1 th g n g1 n1
  echo "Scaling ($sc, medians): the gateway with \`--threads N\` and nginx with \`worker_processes N\`"
  echo "(\`listen ... reuseport\`) on the same load; per thread / per worker is req/s ÷ N, speed-up is"
  echo "req/s at N ÷ req/s at 1. Pinning: ${SWEEP_PIN_NOTE#scaling: }."
  echo
  echo "| threads / workers N | runs (gateway / nginx) | gateway req/s | nginx req/s | gateway req/s per thread | nginx req/s per worker | gateway ÷ nginx | gateway speed-up N ÷ 1 | nginx speed-up N ÷ 1 |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  g1=$(median "$sc" gateway 4 1)
  n1=$(median "$sc" nginx 4 1)
  for th in $(awk -F'\t' -v sc="$sc" 'NR > 1 && $1 == sc { print $19 }' "$RUNS" | sort -n | uniq); do
    g=$(median "$sc" gateway 4 "$th")
    n=$(median "$sc" nginx 4 "$th")
    printf '| %s | %s / %s | %s | %s | %s | %s | %s | %s | %s |\n' "$th" \
      "$(runs_of "$sc" gateway "$th")" "$(runs_of "$sc" nginx "$th")" "$(rps "$g")" "$(rps "$n")" \
      "$(per_thread "$g" "$th")" "$(per_thread "$n" "$th")" "$(ratio "$g" "$n")" \
      "$(ratio "$g" "$g1")" "$(ratio "$n" "$n1")"
  done
  echo
  # Throughput alone would hide a thread count that answers fast but wrongly.
  awk -F'\t' -v sc="$sc" 'NR > 1 && $1 == sc && ($10 + $11 > 0) {
      bad = bad sprintf("%s%s N=%s run %s: %d errors, %d unexpected status", bad == "" ? "" : "; ", $2, $19, $3, $10, $11) }
    END { if (bad == "") print "No run had a transport error or an unexpected status.";
          else print "Runs with transport errors or unexpected statuses (see runs.tsv): " bad "." }' "$RUNS"
}

# walker_table SCENARIO BASELINE: per system, the scenario with its walker against its baseline
# (the same visitors without it), medians over the runs of each.
walker_table() {
  local sc=$1 base=$2 sy up_base up_walk share walker_part p99_base p99_walk
  echo "Walker ($sc against its baseline $base, medians): upstream calls per 1,000 client requests"
  echo "(all answers of the run, warm-up included) and the visitors' p99 without the walker ($base) and"
  echo "with it ($sc, the walker's answers recorded apart). The walker's part is an estimate: the"
  echo "figure with the walker less the baseline's scaled to the visitors' share (with - without ×"
  echo "(1 - walker's share)); it holds when both runs answered about as many requests (see req/s)."
  echo
  echo "| system | runs ($base / $sc) | upstream / 1k req without walker | with walker | walker's part (est.) | visitors' p99 ms without walker | with walker | with ÷ without | walker's p99 ms | walker's share of answers |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for sy in "${SYSTEMS[@]}"; do
    (($(runs_of "$sc" "$sy") > 0)) || continue
    up_base=$(median_unless_constant "$base" "$sy" 14 -)
    up_walk=$(median_unless_constant "$sc" "$sy" 14 -)
    share=$(median "$sc" "$sy" 23)
    walker_part=$(awk -v a="$up_walk" -v b="$up_base" -v w="$share" 'BEGIN {
      if (a == "?" || a == "-" || b == "?" || b == "-" || w == "?" || w == "-") print "-"
      else printf "%.4g", a - b * (1 - w) }')
    p99_base=$(median "$base" "$sy" 21)
    p99_walk=$(median "$sc" "$sy" 21)
    printf '| %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$sy" \
      "$(runs_of "$base" "$sy")" "$(runs_of "$sc" "$sy")" \
      "$(num %.4g "$up_base")" "$(num %.4g "$up_walk")" "$walker_part" \
      "$(ms "$p99_base")" "$(ms "$p99_walk")" "$(ratio "$p99_walk" "$p99_base")" \
      "$(ms "$(median "$sc" "$sy" 24)")" "$(num %.1f%% "$share" 0.01)"
  done
}

# beyond_l1 SCENARIO → the gateway's peak RSS less its L1 bytes per run, in MiB: "median (min..max)".
beyond_l1() {
  awk -F'\t' -v sc="$1" '
    NR > 1 && $1 == sc && $2 == "gateway" && $15 ~ /^[0-9]+$/ && $18 ~ /^[0-9.]+$/ {
      v[++n] = ($15 * 1024 - $18) / 1048576 }
    END {
      if (n == 0) { print "-"; exit }
      for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "%.1f (%.1f..%.1f)\n", m, v[1], v[n] }' "$RUNS"
}

SUMMARY="$RESULTS_DIR/summary.md"
{
  if ((${#SCENARIO_NAMES[@]})); then
    echo "| scenario | system | runs | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | errors | unexpected status | upstream calls | upstream / 1k req | peak RSS MiB | server CPU ms / 1k req | wg-bench exit |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    for sc in "${SCENARIO_NAMES[@]}"; do
      for sy in "${SYSTEMS[@]}"; do
        n=$(runs_of "$sc" "$sy")
        ((n > 0)) || continue
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$sc" "$sy" "$n" \
          "$(rps "$(median "$sc" "$sy" 4)")" "$(ms "$(median "$sc" "$sy" 5)")" "$(ms "$(median "$sc" "$sy" 6)")" \
          "$(ms "$(median "$sc" "$sy" 7)")" "$(ms "$(median "$sc" "$sy" 8)")" "$(ms "$(median "$sc" "$sy" 9)")" \
          "$(median "$sc" "$sy" 10)" "$(median "$sc" "$sy" 11)" \
          "$(median_unless_constant "$sc" "$sy" 13 -)" \
          "$(median_unless_constant "$sc" "$sy" 14 -)" \
          "$(num %.1f "$(median "$sc" "$sy" 15)" 1024)" "$(num %.1f "$(median "$sc" "$sy" 25)" 1)" \
          "$(exits_of "$sc" "$sy")"
      done
    done
    if wants gateway && ((${#SYSTEMS[@]} > 1)); then
      echo
      echo "Ratios (gateway ÷ other, medians): throughput above 1 and p99 below 1 favour the gateway."
      echo
      echo "| scenario | other | req/s ratio | p99 ratio | upstream/1k ratio | server CPU / 1k req ratio |"
      echo "|---|---|---:|---:|---:|---:|"
      for sc in "${SCENARIO_NAMES[@]}"; do
        for sy in "${SYSTEMS[@]}"; do
          [[ $sy != gateway ]] || continue
          (($(runs_of "$sc" "$sy") > 0 && $(runs_of "$sc" gateway) > 0)) || continue
          if is_reference "$sy"; then
            up=n/a
          else
            up=$(ratio "$(median "$sc" gateway 14)" "$(median "$sc" "$sy" 14)")
          fi
          printf '| %s | %s | %s | %s | %s | %s |\n' "$sc" "$sy" \
            "$(ratio "$(median "$sc" gateway 4)" "$(median "$sc" "$sy" 4)")" \
            "$(ratio "$(median "$sc" gateway 7)" "$(median "$sc" "$sy" 7)")" "$up" \
            "$(ratio "$(median "$sc" gateway 25)" "$(median "$sc" "$sy" 25)")"
        done
      done
    fi
    if wants gateway; then
      echo
      echo "Gateway internals (medians): Redis commands per measured client request (what the gateway"
      echo "asked during the measured period: cache lookups and stores, quota counting, locks, with a"
      echo "script's own commands counted one by one; not measurable when Redis restarts mid-run),"
      echo "what L1 held at the end, and peak RSS"
      echo "less L1's bytes (bodies and their compressed variants, plus the cache's per-entry overhead"
      echo "estimate; not the body files big bodies are sent from, which RSS does not show): what the"
      echo "process holds beyond its cache, median and range over the runs."
      echo
      echo "| scenario | runs | Redis commands / request | L1 entries | L1 MiB | peak RSS MiB | RSS − L1 MiB (min..max) |"
      echo "|---|---:|---:|---:|---:|---:|---:|"
      for sc in "${SCENARIO_NAMES[@]}"; do
        n=$(runs_of "$sc" gateway)
        ((n > 0)) || continue
        redis=$(median "$sc" gateway 16)
        l1e=$(median "$sc" gateway 17)
        l1b=$(median "$sc" gateway 18)
        rss=$(median "$sc" gateway 15)
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$sc" "$n" \
          "$(awk -v r="$redis" 'BEGIN { if (r == "?" || r == "-") print "-"; else printf "%.3f", r }')" \
          "$(awk -v e="$l1e" 'BEGIN { if (e == "?" || e == "-") print "-"; else printf "%d", e }')" \
          "$(awk -v b="$l1b" 'BEGIN { if (b == "?" || b == "-") print "-"; else printf "%.1f", b / 1048576 }')" \
          "$(num %.1f "$rss" 1024)" "$(beyond_l1 "$sc")"
      done
    fi
  fi
  for sc in "${SCENARIO_NAMES[@]}"; do
    [[ -n ${BASELINE_OF[$sc]:-} ]] || continue
    echo
    walker_table "$sc" "${BASELINE_OF[$sc]}"
  done
  separate=$((${#SCENARIO_NAMES[@]} > 0))
  for sc in "${SWEEP_NAMES[@]}"; do
    ((separate == 0)) || echo
    separate=1
    scaling_table "$sc"
  done
  echo
  if ((${#FAILED_RUNS[@]} + ${#THRESHOLD_RUNS[@]} == 0)); then
    echo "Every wg-bench run exited 0$([[ -z $FAIL_IF ]] || echo " (gateway runs with \`--fail-if $FAIL_IF\`)")."
  else
    echo "Runs whose wg-bench did not exit 0$([[ -z $FAIL_IF ]] || echo " (gateway runs with \`--fail-if $FAIL_IF\`)"):"
    echo
    for what in "${FAILED_RUNS[@]}" "${THRESHOLD_RUNS[@]}"; do echo "- $what"; done
  fi
} >"$SUMMARY"

# ----------------------------------------------------------------------------- data and plots
# Long-format data, one row per group (scenario or percentile) and system: the median over the
# runs and the range (min, max) over them.
# spread_rows GROUP SCENARIO COLUMN DIVISOR SYSTEM... → "GROUP SYSTEM runs median min max" rows.
spread_rows() {
  local group=$1 sc=$2 col=$3 div=$4 sy m lo hi
  shift 4
  for sy in "$@"; do
    read -r m lo hi <<<"$(spread "$sc" "$sy" "$col")"
    [[ $m != "?" && $m != "-" ]] || continue
    printf '%s\t%s\t%s\t%s\n' "$group" "$sy" "$(runs_of "$sc" "$sy")" \
      "$(awk -v m="$m" -v lo="$lo" -v hi="$hi" -v d="$div" 'BEGIN { printf "%.6g\t%.6g\t%.6g", m / d, lo / d, hi / d }')"
  done
}
UPSTREAM_SYSTEMS=()
for sy in "${SYSTEMS[@]}"; do is_reference "$sy" || UPSTREAM_SYSTEMS+=("$sy"); done
if ((${#SCENARIO_NAMES[@]})); then
  {
    printf 'scenario\tsystem\truns\trps_median\trps_min\trps_max\n'
    for sc in "${SCENARIO_NAMES[@]}"; do spread_rows "$sc" "$sc" 4 1 "${SYSTEMS[@]}"; done
  } >"$RESULTS_DIR/throughput.dat"
  {
    printf 'scenario\tsystem\truns\tupstream_per_1k_median\tupstream_per_1k_min\tupstream_per_1k_max\n'
    for sc in "${SCENARIO_NAMES[@]}"; do
      ((${#UPSTREAM_SYSTEMS[@]} == 0)) || spread_rows "$sc" "$sc" 14 1 "${UPSTREAM_SYSTEMS[@]}"
    done
  } >"$RESULTS_DIR/upstream.dat"
fi
for sc in "${SCENARIO_NAMES[@]}"; do
  {
    printf 'percentile\tsystem\truns\tms_median\tms_min\tms_max\n'
    col=5
    for p in p50 p90 p99 p99.9; do
      spread_rows "$p" "$sc" "$col" 1000 "${SYSTEMS[@]}"
      col=$((col + 1))
    done
  } >"$RESULTS_DIR/latency-$sc.dat"
done
# walker-SCENARIO.dat, for a scenario with a baseline: the visitors' p99 without the walker (the
# baseline) and with it, and the walker's own p99, in ms.
for sc in "${SCENARIO_NAMES[@]}"; do
  base=${BASELINE_OF[$sc]:-}
  [[ -n $base ]] || continue
  {
    printf 'group\tsystem\truns\tms_median\tms_min\tms_max\n'
    spread_rows "visitors p99 without the walker ($base)" "$base" 21 1000 "${SYSTEMS[@]}"
    spread_rows "visitors p99 with the walker ($sc)" "$sc" 21 1000 "${SYSTEMS[@]}"
    spread_rows "walker p99 ($sc)" "$sc" 24 1000 "${SYSTEMS[@]}"
  } >"$RESULTS_DIR/walker-$sc.dat"
done
# scaling-SCENARIO.dat: req/s by thread count; "linear" is the gateway's 1-thread median times N.
for sc in "${SWEEP_NAMES[@]}"; do
  {
    printf 'threads\tsystem\truns\trps_median\trps_min\trps_max\n'
    g1=$(median "$sc" gateway 4 1)
    for th in $(awk -F'\t' -v sc="$sc" 'NR > 1 && $1 == sc { print $19 }' "$RUNS" | sort -n | uniq); do
      for sy in gateway nginx; do
        read -r m lo hi <<<"$(spread "$sc" "$sy" 4 "$th")"
        [[ $m != "?" && $m != "-" ]] || continue
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$th" "$sy" "$(runs_of "$sc" "$sy" "$th")" "$m" "$lo" "$hi"
      done
      [[ $g1 == "?" || $g1 == "-" ]] ||
        printf '%s\tlinear\t-\t%s\t%s\t%s\n' "$th" "$(awk -v v="$g1" -v n="$th" 'BEGIN { printf "%.0f", v * n }')" - -
    done
  } >"$RESULTS_DIR/scaling-$sc.dat"
done

# The footer of every plot: machine, date, source, and the load (of the plot's scenario, or
# "per panel" when each panel is a scenario with its own).
CPU_MODEL=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
SOURCE_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- . ':!bench/published' ':!bench/RESULTS.md' 2>/dev/null || echo ' with uncommitted changes')"
# load_of SCENARIO → "closed loop, 50 connections" / "open loop at 2000 req/s, 64 connections".
load_of() {
  awk -F'\t' -v sc="$1" 'NR > 1 && $1 == sc {
      if ($2 == "open") printf "open loop at %s req/s, %s connections", $4, $3
      else printf "closed loop, %s connections", $3
      exit }' "$SCENARIOS"
}
footer() {  # LOAD [bars|points]
  echo "${CPU_MODEL:-unknown CPU}, $NCPU CPUs | $RUN_START | $1 | source $SOURCE_REV | ${2:-bars}: median of the runs, whiskers: min..max over the runs"
}

PLOT_NOTES=()  # charts or panels not drawn, for the report
PLOTS=()       # "title|file" of the plots drawn

# bar_chart DATA PNG TITLE YLABEL LABELS FOOTER: one panel per group (column 1 of DATA), one bar per
# system (the median) with whiskers over the runs' range and the value printed above. LABELS is
# a file "group<TAB>panel title" (may be empty). The rule for the scale: a panel whose largest
# median is 10 times its smallest non-zero one or more gets a log axis (and says so); the
# others start at 0. A panel whose values are all zero or missing is not drawn.
bar_chart() {
  local data=$1 png=$2 title=$3 ylabel=$4 labels=$5 foot=$6 script="$WORK/plot.gp" notes="$WORK/plot.notes"
  : >"$notes"
  awk -F'\t' -v png="$png" -v title="$title" -v ylabel="$ylabel" -v foot="$foot" -v notes="$notes" '
    function fmt(v,   a) {
      a = v < 0 ? -v : v
      if (a >= 100000) return sprintf("%.0fk", v / 1000)
      if (a >= 10000) return sprintf("%.1fk", v / 1000)
      if (a >= 100) return sprintf("%.0f", v)
      if (a >= 10) return sprintf("%.1f", v)
      if (a >= 1) return sprintf("%.2f", v)
      if (a == 0) return "0"
      return sprintf("%.3g", v)
    }
    function color(s) {  # 24-bit RGB for "lc rgb variable"
      if (s == "gateway") return 2062260    # #1f77b4
      if (s == "nginx") return 2924588      # #2ca02c
      if (s == "varnish") return 16744206   # #ff7f0e
      if (s == "constant") return 8355711   # #7f7f7f
      if (s == "static") return 14907330    # #e377c2
      return 9725885                        # #9467bd
    }
    function q(s) { gsub(/\x27/, "", s); return "\x27" s "\x27" }
    FNR == 1 && FILENAME != ARGV[1] { next }  # the data file header
    FILENAME == ARGV[1] { ptitle[$1] = $2; next }
    {
      g = $1
      if (!(g in n)) { order[++ng] = g; nonzero[g] = 0 }
      i = n[g]++
      sys[g, i] = $2; med[g, i] = $4; lo[g, i] = $5; hi[g, i] = $6
      if ($4 + 0 != 0 || $6 + 0 != 0) nonzero[g] = 1
    }
    END {
      drawn = 0
      for (k = 1; k <= ng; k++) {
        g = order[k]
        if (nonzero[g]) keep[++drawn] = g
        else print g ": all values are zero or missing, not drawn" >> notes
      }
      if (drawn == 0) { print "nothing to draw" >> notes; exit 3 }
      cols = (drawn <= 2) ? drawn : (drawn == 4) ? 2 : 3
      rows = int((drawn + cols - 1) / cols)
      W = 440 * cols + 80; if (W < 1000) W = 1000
      H = 320 * rows + 110
      printf "set terminal pngcairo size %d,%d font \",10\"\n", W, H
      printf "set output %s\n", q(png)
      print "set style fill solid 0.85 noborder"
      print "set grid ytics"
      print "set key off"
      print "set bmargin 3"
      printf "set label 1001 %s at screen 0.01, screen 0.018 font \",8\"\n", q(foot)
      printf "set multiplot layout %d,%d title %s font \",13\" margins %.3f,%.3f,%.3f,%.3f spacing %.3f,%.3f\n", \
        rows, cols, q(title), 105 / W, 1 - 20 / W, 80 / H, 1 - 55 / H, 115 / W, 70 / H
      for (k = 1; k <= drawn; k++) {
        g = keep[k]; m = n[g]
        minpos = 0; maxv = 0
        for (i = 0; i < m; i++) {
          if (med[g, i] > 0 && (minpos == 0 || med[g, i] < minpos)) minpos = med[g, i]
          if (med[g, i] > maxv) maxv = med[g, i]
          if (hi[g, i] > maxv) maxv = hi[g, i]
        }
        low = 0; logy = (minpos > 0 && maxv / minpos >= 10)
        if (logy) {
          low = 1; while (low > minpos / 2) low /= 10; while (low * 10 <= minpos / 2) low *= 10
        }
        printf "$P%d << EOD\n", k
        for (i = 0; i < m; i++) {
          y = med[g, i]; ylo = lo[g, i]; yhi = hi[g, i]
          if (logy) { if (y < low) y = low; if (ylo < low) ylo = low; if (yhi < low) yhi = low }
          printf "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t\"%s\"\n", i, y, i - 0.36, i + 0.36, low, y, color(sys[g, i]), ylo, yhi, fmt(med[g, i])
        }
        print "EOD"
        pt = (g in ptitle) ? ptitle[g] : g
        printf "set title %s\n", q(pt (logy ? " (log scale)" : ""))
        printf "set ylabel %s\n", q(ylabel)
        printf "set xrange [-0.6:%f]\n", m - 0.4
        printf "set xtics ("
        for (i = 0; i < m; i++) printf "%s%s %d", i ? ", " : "", q(sys[g, i]), i
        print ") nomirror"
        if (logy) { print "set logscale y"; printf "set yrange [%g:%g]\n", low, maxv * 4 }
        else { print "unset logscale y"; printf "set yrange [0:%g]\n", (maxv > 0) ? maxv * 1.22 : 1 }
        printf "plot $P%d using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable, \\\n", k
        printf "  $P%d using 1:8:(0):($9 - $8) with vectors heads size 0.06,90 lc rgb \"black\" linewidth 1.2, \\\n", k
        printf "  $P%d using 1:9:10 with labels offset 0,0.8 font \",9\"\n", k
        if (k == 1) print "unset label 1001"
      }
      print "unset multiplot"
    }' "$labels" "$data" >"$script" || true
  while IFS= read -r note; do PLOT_NOTES+=("$(basename "$png"): $note"); done <"$notes"
  if grep -q '^nothing to draw$' "$notes"; then
    rm -f "$png"
    return 0
  fi
  gnuplot "$script" 2>"$WORK/gnuplot.err" || { log "gnuplot failed for $png:"; cat "$WORK/gnuplot.err" >&2; return 0; }
  PLOTS+=("$title|$(basename "$png")")
}

# line_chart DATA PNG TITLE FOOTER: scaling, req/s against N per system with whiskers over the
# runs, the value at each point, and the gateway's 1-thread figure × N dashed.
line_chart() {
  local data=$1 png=$2 title=$3 foot=$4 blocks curves="" sy color
  blocks=$(awk -F'\t' 'NR > 1 {
      a = $4 + 0; l = (a >= 10000) ? sprintf("%.1fk", a / 1000) : sprintf("%.0f", a)
      if ($2 == "linear") lin = lin sprintf("%s\t%s\n", $1, $4)
      else rows[$2] = rows[$2] sprintf("%s\t%s\t%s\t%s\t\"%s\"\n", $1, $4, $5, $6, l) }
    END {
      printf "$LINEAR << EOD\n%sEOD\n", lin
      for (s in rows) printf "$%s << EOD\n%sEOD\n", toupper(s), rows[s] }' "$data")
  for sy in gateway nginx; do
    grep -q "^[$]${sy^^} " <<<"$blocks" || continue
    color=$([[ $sy == gateway ]] && echo '#1f77b4' || echo '#2ca02c')
    curves+="\$${sy^^} using 1:2:3:4 with yerrorlines linewidth 2 linecolor rgb '$color' title '$sy', "
    curves+="\$${sy^^} using 1:4:5 with labels offset 0,0.9 notitle, "
  done
  gnuplot <<GP 2>"$WORK/gnuplot.err" || { log "gnuplot failed for $png:"; cat "$WORK/gnuplot.err" >&2; return 0; }
set terminal pngcairo size 1000,600 font ",10"
set output '$png'
$blocks
set title '$title'
set xlabel 'N: gateway threads / nginx worker processes'
set ylabel 'requests/s (higher is better)'
set key inside left top
set grid
set bmargin 6
set offsets 0, 0, graph 0.1, 0
set label 1001 '${foot//\'/}' at screen 0.01, screen 0.02 font ",8"
set xrange [0.5:$MAX_THREADS + 0.5]
set yrange [0:*]
$(if ((MAX_THREADS <= 16)); then echo "set xtics 1"; fi)
plot $curves\$LINEAR using 1:2 with lines dashtype 2 linecolor rgb 'gray40' title 'gateway at 1 thread × N (linear)'
GP
  PLOTS+=("$title|$(basename "$png")")
}

if ((HAVE_GNUPLOT)); then
  if ((${#SCENARIO_NAMES[@]})); then
    awk -F'\t' 'NR > 1 {
        load = ($2 == "open") ? sprintf("open loop %s req/s, %s conn.", $4, $3) : sprintf("closed loop, %s conn.", $3)
        printf "%s\t%s: %s\n", $1, $1, load }' "$SCENARIOS" >"$WORK/scenario-titles.tsv"
    bar_chart "$RESULTS_DIR/throughput.dat" "$RESULTS_DIR/throughput.png" \
      "Throughput per scenario and system (higher is better)" "requests/s (higher is better)" \
      "$WORK/scenario-titles.tsv" "$(footer "load: in each panel title")"
    if ((${#UPSTREAM_SYSTEMS[@]})); then
      bar_chart "$RESULTS_DIR/upstream.dat" "$RESULTS_DIR/upstream.png" \
        "Upstream calls per 1,000 client requests (lower is better)" "upstream calls / 1k req (lower is better)" \
        "$WORK/scenario-titles.tsv" "$(footer "load: in each panel title")"
    fi
  fi
  : >"$WORK/no-titles.tsv"
  for sc in "${SCENARIO_NAMES[@]}"; do
    bar_chart "$RESULTS_DIR/latency-$sc.dat" "$RESULTS_DIR/latency-$sc.png" \
      "Latency percentiles: $sc (lower is better)" "ms (lower is better)" "$WORK/no-titles.tsv" \
      "$(footer "$(load_of "$sc")")"
  done
  for sc in "${SCENARIO_NAMES[@]}"; do
    [[ -f $RESULTS_DIR/walker-$sc.dat ]] || continue
    bar_chart "$RESULTS_DIR/walker-$sc.dat" "$RESULTS_DIR/walker-$sc.png" \
      "p99 with and without the walker: $sc (lower is better)" "ms (lower is better)" \
      "$WORK/no-titles.tsv" "$(footer "$(load_of "$sc")")"
  done
  for sc in "${SWEEP_NAMES[@]}"; do
    line_chart "$RESULTS_DIR/scaling-$sc.dat" "$RESULTS_DIR/scaling-$sc.png" \
      "Throughput by threads / workers: $sc (higher is better)" "$(footer "$(load_of "$sc")" points)"
  done
else
  log "gnuplot not found: no PNG plots"
  PLOT_NOTES+=("gnuplot was not installed: no plots")
fi

# ----------------------------------------------------------------------------- reports
# write_report PREFIX: the run's report (report.md in the run's folder; with --publish also
# bench/RESULTS.md, whose links to the files carry PREFIX "published/").
write_report() {
  local prefix=$1 plot line
  echo "# Bench results"
  echo
  if [[ -n $prefix ]]; then
    echo "Written by \`bench/run.sh --publish\` from the run whose files are in [${prefix%/}/](${prefix%/}/); see"
    echo "[README.md](README.md) for what each scenario does and how to read the figures."
  else
    echo "Written by \`bench/run.sh\` for this run; see bench/README.md for what each scenario does and"
    echo "how to read the figures."
  fi
  echo "Latencies are client-side (wg-bench), in ms."
  echo
  echo "## Run"
  echo
  echo "- Date (UTC): $RUN_START"
  echo "- Command: \`bench/run.sh ${ORIGINAL_ARGS//$ROOT\//}\`"  # paths in the checkout: relative
  echo "- Source: $SOURCE_REV"
  if ((${#SCENARIO_NAMES[@]})); then
    echo "- Systems: ${SYSTEMS[*]}; gateway with --threads $GATEWAY_THREADS, nginx with 1 worker, Varnish with malloc storage; access logs off"
    echo "- Pinning: $PIN_NOTE"
  fi
  if ((${#SWEEP_NAMES[@]})); then
    echo "- Scaling (${SWEEP_NAMES[*]}): gateway with --threads N$(wants nginx && echo " and nginx with worker_processes N (listen reuseport)"), N = 1..$MAX_THREADS; wg-bench with $SWEEP_BENCH_THREADS thread(s)$([[ -z $CONNECTIONS ]] || echo " and $CONNECTIONS connections"); access logs off"
    echo "- Pinning (${SWEEP_NAMES[*]}): ${SWEEP_PIN_NOTE#scaling: }"
  fi
  [[ -z $FAIL_IF ]] || echo "- Gateway runs with \`--fail-if $FAIL_IF\`"
  echo "- Load average (1, 5, 15 min) before / after the run: $LOAD_AT_START / $(cut -d' ' -f1-3 /proc/loadavg) (anything well above 0 means other work shared the CPUs)"
  echo
  echo "Load per scenario (after run.sh's overrides):"
  echo
  echo "| scenario | load | measured / warm-up ms | runs per system |"
  echo "|---|---|---:|---:|"
  awk -F'\t' 'NR > 1 {
      load = ($2 == "open") ? sprintf("open loop at %s req/s, %s connections", $4, $3) : sprintf("closed loop, %s connections", $3)
      printf "| %s | %s | %s / %s | %s |\n", $1, load, $5, $6, $7 }' "$SCENARIOS"
  if wants constant || wants static; then
    echo
    echo "The constant reference serves bodies of each scenario's mean size, from $SAMPLE_REQUESTS sampled requests$(wants static && echo ", nginx static the same bytes as files"):"
    echo
    awk -F'\t' 'NR > 1 && $10 != "-" { printf "- %s: %s\n", $1, $10 }' "$SCENARIOS"
  fi
  echo
  echo "## Machine"
  echo
  echo "- CPU: ${CPU_MODEL:-unknown}, $NCPU CPUs"
  echo "- Memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  # shellcheck source=/dev/null
  echo "- Kernel: $(uname -r); OS: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "- redis-server $(redis-server --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*/\1/p')$(wants nginx && echo ", $(nginx -v 2>&1 | sed 's/.*: //')")$(wants varnish && echo ", $(varnishd -V 2>&1 | sed -n '1s/.*(\(varnish-[0-9.]*\).*/\1/p')")"
  echo
  echo "## Figures"
  echo
  cat "$SUMMARY"
  echo
  if ((${#PLOTS[@]})); then
    line="Plots:"
    for plot in "${PLOTS[@]}"; do line+=" [${plot%%|*}](${prefix}${plot#*|}),"; done
    echo "${line%,}."
    echo
  fi
  if ((${#PLOT_NOTES[@]})); then
    echo "Not drawn:"
    echo
    for line in "${PLOT_NOTES[@]}"; do echo "- $line"; done
    echo
  fi
  echo "Per-run JSON from wg-bench: \`${prefix}json/\`; every run's row: \`${prefix}runs.tsv\`; load per scenario: \`${prefix}scenarios.tsv\`."
}
write_report "" >"$RESULTS_DIR/report.md"

# bench/results/latest: the newest folder of bench/results/ (a run elsewhere, --out, leaves it).
if [[ $(dirname "$RESULTS_DIR") == "$BENCH_DIR/results" ]]; then
  ln -sfn "$(basename "$RESULTS_DIR")" "$BENCH_DIR/results/latest"
fi

log "summary ($SUMMARY):"
cat "$SUMMARY"
if ((PUBLISH)); then
  # Publishing replaces bench/published/ with this run's folder and rewrites bench/RESULTS.md.
  rm -rf "$PUBLISHED_DIR"
  mkdir -p "$PUBLISHED_DIR"
  cp -R "$RESULTS_DIR"/. "$PUBLISHED_DIR"/
  write_report "published/" >"$BENCH_DIR/RESULTS.md"
  log "published: bench/published/ and bench/RESULTS.md now hold this run"
fi
log "results in $RESULTS_DIR (report.md, summary.md, runs.tsv, plots)"

if ((${#FAILED_RUNS[@]})); then
  log "runs whose wg-bench failed: $(printf '%s; ' "${FAILED_RUNS[@]}")"
  exit 1
fi
if ((${#THRESHOLD_RUNS[@]})); then
  log "gateway runs that crossed --fail-if $FAIL_IF: $(printf '%s; ' "${THRESHOLD_RUNS[@]}")"
  exit 5
fi
