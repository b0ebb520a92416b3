# shellcheck shell=bash
# Process helpers shared by the bench scripts (run.sh, soak.sh): background processes that a
# trap stops on exit, the ports they listen on, and what they use. The caller defines log(),
# an array PIDS (what its exit trap stops), LAST_PID and WORK (a scratch folder).

stop_pid() {
  local pid=$1 i
  [[ -n $pid ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  forget_pid "$pid"
}

forget_pid() {
  local kept=() p
  for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || kept+=("$p"); done
  PIDS=("${kept[@]}")
}

# start_bg LOGFILE COMMAND...: starts in the background, sets LAST_PID.
start_bg() {
  local logfile=$1
  shift
  # Truncated here, not by the child's redirection: that runs after the fork, and a reader
  # started right away could still see the previous process's lines (its port).
  : >"$logfile"
  "$@" >>"$logfile" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# The port of a "listening" line (the gateway's, the stub's and wg-bench's format), waiting up to
# TRIES x 50 ms (default 300: 15 s).
listen_port() {
  local file=$1 listener=$2 pid=$3 tries=${4:-300} line i
  for ((i = 0; i < tries; i++)); do
    line=$(grep -o "\"listener\":\"$listener\",\"address\":\"[^\"]*\"" "$file" 2>/dev/null | head -n 1 || true)
    if [[ -n $line ]]; then
      line=${line%\"}
      echo "${line##*:}"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  log "no listening line for $listener in $file:"
  tail -n 20 "$file" >&2 || true
  return 1
}

wait_port() {
  local port=$1 i
  for ((i = 0; i < 300; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# A loopback port nobody listens on right now (for servers that cannot bind port 0 and report),
# below the kernel's ephemeral range so that no outgoing connection can be holding it.
EPHEMERAL_LOW=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
((EPHEMERAL_LOW > 12000)) || EPHEMERAL_LOW=32768
free_port() {
  local port i
  for ((i = 0; i < 200; i++)); do
    port=$((10000 + RANDOM % (EPHEMERAL_LOW - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

http() { curl -s --noproxy '*' --max-time 10 "$@"; }

peak_rss_kb() {
  local total=0 p v
  for p in "$1" $(pgrep -P "$1" 2>/dev/null || true); do
    v=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
    total=$((total + ${v:-0}))
  done
  echo "$total"
}

# Bytes PID holds in the gateway's body files (memory files it sends big bodies from with
# sendfile): memory that L1 charges but RSS does not show.
body_file_bytes() {
  find "/proc/$1/fd" -lname '/memfd:wg-body*' -exec stat -L -c %s {} + 2>/dev/null |
    awk '{ total += $1 } END { printf "%.0f\n", total }'
}

# CPU time (user + system, in clock ticks) used so far by PID and every process below it (nginx's
# worker, Varnish's child): read before and after a measured period.
tree_cpu_ticks() {
  local total p
  # Fields 14 and 15 of /proc/PID/stat, counted after the command name (which may hold spaces).
  total=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }' || true)
  total=${total:-0}
  for p in $(pgrep -P "$1" 2>/dev/null || true); do total=$((total + $(tree_cpu_ticks "$p"))); done
  echo "$total"
}

# Traps: on exit (normal, an error, Ctrl-C or SIGTERM) every process in PIDS is stopped and
# WORK removed; a failing command is logged with its line.
stop_all_on_exit() {
  trap stop_all_and_exit EXIT
  trap 'log "failed: line $LINENO: $BASH_COMMAND"' ERR
  trap 'exit 130' INT TERM
}
stop_all_and_exit() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
  rm -rf "$WORK"
  exit "$status"
}
