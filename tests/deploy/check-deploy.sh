#!/usr/bin/env bash
# Checks of the deployment files under deploy/ that need no container engine or cluster.
#   tests/deploy/check-deploy.sh yamllint|k8s|shellcheck|systemd|references|redis ROOT
#   tests/deploy/check-deploy.sh runtime-libs ROOT BINARY...
#   tests/deploy/check-deploy.sh healthcheck ROOT STUB_BINARY
# Exit 0 = passed, 1 = failed, 77 = skipped (systemd not installed; ctest shows it as skipped).
# A missing tool is a failure that names the fix: deploy/install-deps.sh --test-tools.
set -euo pipefail

if (($# < 2)); then
  echo "usage: $0 yamllint|k8s|shellcheck|systemd|references|redis|runtime-libs|healthcheck|quickstart" \
    "ROOT [BINARY...]" >&2
  exit 2
fi
mode=$1
root=$2
shift 2

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "FAIL: $1 is not installed: run deploy/install-deps.sh --test-tools (package $2)" >&2
    exit 1
  fi
}

# Debian's python3-yaml installs into the system interpreter, not into any other python3 on PATH.
python=/usr/bin/python3

run_python_check() {
  if [[ ! -x $python ]] || ! "$python" -c 'import yaml, tomllib' 2>/dev/null; then
    echo "FAIL: $python with PyYAML is missing: run deploy/install-deps.sh --test-tools" \
      "(package python3-yaml)" >&2
    exit 1
  fi
  "$python" "$root/tests/deploy/check_deploy.py" "$1" "$root"
}

check_yamllint() {
  need yamllint yamllint
  local count
  count=$(find "$root/deploy" -type f \( -name '*.yaml' -o -name '*.yml' \) | wc -l)
  if ((count == 0)); then
    echo "FAIL: no YAML files under deploy/" >&2
    exit 1
  fi
  echo "yamllint: $count files under deploy/"
  yamllint --strict -c "$root/deploy/.yamllint" "$root/deploy"
  echo "1 passed, 0 failed"
}

check_shellcheck() {
  need shellcheck shellcheck
  local -a scripts=()
  local dir
  for dir in deploy bench tests; do
    if [[ -d $root/$dir ]]; then
      mapfile -t -O "${#scripts[@]}" scripts < <(find "$root/$dir" -type f -name '*.sh' | sort)
    fi
  done
  # and the package's maintainer scripts (POSIX sh: shellcheck reads their #! line).
  scripts+=("$root/.ci/run" "$root"/deploy/debian/{postinst,prerm,postrm})
  local failed=0 script
  for script in "${scripts[@]}"; do
    # -x: a helper a script sources is checked with the script.
    if ! shellcheck -x "$script"; then
      failed=$((failed + 1))
    fi
  done
  echo "$((${#scripts[@]} - failed)) passed, $failed failed"
  ((failed == 0))
}

check_systemd() {
  if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "SKIPPED: systemd-analyze is not installed (package systemd); units not verified"
    exit 77
  fi
  local work
  work=$(mktemp -d)
  # shellcheck disable=SC2064  # expand $work now: it is local to this function
  trap "rm -rf '$work'" EXIT
  # verify insists that ExecStart names an existing executable; stand one in for the binary
  # that an installation puts at /usr/local/bin/widget-gateway.
  mkdir -p "$work/bin"
  printf '#!/bin/sh\nexit 0\n' >"$work/bin/widget-gateway"
  chmod +x "$work/bin/widget-gateway"
  local failed=0 passed=0 unit name output
  for unit in "$root"/deploy/systemd/*.service; do
    name=$(basename "$unit")
    sed "s#/usr/local/bin/widget-gateway#$work/bin/widget-gateway#" "$unit" >"$work/$name"
    # A template is verified through an instance, so that %i is expanded.
    if [[ $name == *@.service ]]; then
      ln -s "$name" "$work/${name/@./@a.}"
      name=${name/@./@a.}
    fi
    # verify exits 0 on unknown keys and unparsable values: any output is a failure.
    if ! output=$(cd "$work" && systemd-analyze verify "./$name" 2>&1) || [[ -n $output ]]; then
      echo "FAIL: systemd-analyze verify $name:" >&2
      echo "$output" >&2
      failed=$((failed + 1))
    else
      passed=$((passed + 1))
    fi
    # Exposure on systemd's 0..100 scale (shown divided by 10): 20 keeps the unit "OK".
    if ! output=$(cd "$work" && systemd-analyze security --offline=true --threshold=20 \
      "./$name" 2>&1); then
      echo "FAIL: systemd-analyze security $name: exposure above 2.0" >&2
      echo "$output" | tail -n 15 >&2
      failed=$((failed + 1))
    else
      echo "$name: $(echo "$output" | grep 'Overall exposure' || true)"
      passed=$((passed + 1))
    fi
  done
  echo "$passed passed, $failed failed"
  ((failed == 0 && passed > 0))
}

# Every shared library a binary loads must come from the base image (the C and C++ runtime) or
# from a package the Dockerfile's runtime stage installs.
check_runtime_libs() {
  need ldd libc-bin
  need dpkg-query dpkg
  if (($# == 0)); then
    echo "FAIL: no binaries given" >&2
    exit 1
  fi
  local runtime_stage
  runtime_stage=$(sed -n '/^FROM .* AS runtime/,$p' "$root/deploy/Dockerfile")
  if [[ -z $runtime_stage ]]; then
    echo "FAIL: deploy/Dockerfile has no 'AS runtime' stage" >&2
    exit 1
  fi
  local failed=0 passed=0 binary lib path pkg candidate
  for binary in "$@"; do
    if [[ ! -x $binary ]]; then
      echo "FAIL: $binary is not built" >&2
      failed=$((failed + 1))
      continue
    fi
    while read -r lib path; do
      pkg=
      # With merged /usr, ldd may print /lib/... where dpkg knows /usr/lib/... or the reverse.
      for candidate in "$path" "$(readlink -f "$path")" "/usr$path" "${path#/usr}"; do
        if pkg=$(dpkg-query -S "$candidate" 2>/dev/null); then
          pkg=${pkg%%:*}
          break
        fi
        pkg=
      done
      if [[ -z $pkg ]]; then
        echo "FAIL: $(basename "$binary"): $lib ($path) belongs to no Debian package" >&2
        failed=$((failed + 1))
      elif [[ $pkg =~ ^(libc6|libstdc\+\+6|libgcc-s1)$ ]]; then
        passed=$((passed + 1))  # in every Debian base image
      elif [[ $pkg =~ ^lib(asan|ubsan|lsan|tsan)[0-9]+$ ]]; then
        passed=$((passed + 1))  # a -DWG_SANITIZE=ON test build; the image builds without
      elif grep -qE "(^|[[:space:]])${pkg//+/\\+}([[:space:]]|$)" <<<"$runtime_stage"; then
        passed=$((passed + 1))
      else
        echo "FAIL: $(basename "$binary") loads $lib from $pkg, which the Dockerfile's" \
          "runtime stage does not install" >&2
        failed=$((failed + 1))
      fi
    done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
  done
  echo "$passed passed, $failed failed"
  ((failed == 0 && passed > 0))
}

# The image's health check script against a real HTTP server: the stub upstream on an
# ephemeral loopback port (always stopped on exit).
check_healthcheck() {
  local stub=${1:-}
  if [[ ! -x $stub ]]; then
    echo "FAIL: the stub upstream binary is not built: ${stub:-(none given)}" >&2
    exit 1
  fi
  local work stub_pid port="" failed=0 passed=0
  work=$(mktemp -d)
  # Created here: the background job opens it asynchronously, after the polling may start.
  : >"$work/stub.log"
  "$stub" --listen 127.0.0.1:0 --widgets 3 2>"$work/stub.log" &
  stub_pid=$!
  # shellcheck disable=SC2064  # expand now: both are local to this function
  trap "kill $stub_pid 2>/dev/null || true; wait $stub_pid 2>/dev/null || true; rm -rf '$work'" EXIT
  for _ in $(seq 100); do
    port=$(sed -nE 's/.*"event":"listening".*"address":"127\.0\.0\.1:([0-9]+)".*/\1/p' \
      "$work/stub.log")
    [[ -n $port ]] && break
    sleep 0.1
  done
  if [[ -z $port ]]; then
    echo "FAIL: the stub did not start: $(cat "$work/stub.log")" >&2
    exit 1
  fi
  local check=$root/deploy/docker/healthcheck.sh
  if timeout 10 "$check" "$port" '/__stub/widgets?limit=1'; then
    passed=$((passed + 1))
  else
    echo "FAIL: healthcheck.sh reported a 200 answer as unhealthy" >&2
    failed=$((failed + 1))
  fi
  if timeout 10 "$check" "$port" /no-such-path 2>/dev/null; then
    echo "FAIL: healthcheck.sh reported a 404 answer as healthy" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
  kill "$stub_pid"
  wait "$stub_pid" 2>/dev/null || true
  if timeout 10 "$check" "$port" /healthz 2>/dev/null; then
    echo "FAIL: healthcheck.sh reported a closed port as healthy" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
  echo "$passed passed, $failed failed"
  ((failed == 0))
}

# deploy/quickstart.sh as a user runs it, stopped with Ctrl-C: SIGINT to its whole process
# group, as a terminal sends it. The gateway must drain and give its lease back to a Redis that
# is still there (no warning at all), and every process must be gone afterwards.
check_quickstart() {
  local build_dir=${1:-}
  if [[ ! -x $build_dir/bin/widget-gateway || ! -x $build_dir/bin/widget-upstream-stub ]]; then
    echo "FAIL: the gateway and the stub are not built in ${build_dir:-(none given)}" >&2
    exit 1
  fi
  need redis-server redis-server
  # A base port whose four ports (base, +1, +999, +1010) nobody listens on.
  local base="" candidate offset busy
  for _ in $(seq 50); do
    candidate=$((20000 + RANDOM % 9000))
    busy=0
    for offset in 0 1 999 1010; do
      if (exec 3<>"/dev/tcp/127.0.0.1/$((candidate + offset))") 2>/dev/null; then busy=1; fi
    done
    if ((busy == 0)); then base=$candidate; break; fi
  done
  [[ -n $base ]] || { echo "FAIL: no free base port" >&2; exit 1; }
  local work pid
  work=$(mktemp -d)
  # Made here, not by the job's redirection: the loop below may read it before the job starts
  # (sed on a missing file failed, and set -e ended the check at once).
  : >"$work/out"
  # Its own session and process group, with SIGINT at its default (a job started from a
  # script inherits SIGINT ignored, and bash could not trap it).
  setsid python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' bash "$root/deploy/quickstart.sh" --port "$base" \
    --no-build --build-dir "$build_dir" >"$work/out" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064  # expand now: both are local to this function
  trap "kill -KILL -- -$pid 2>/dev/null || true; pkill -KILL -f -- '--port $base' || true; rm -rf '$work'" EXIT
  local url="" i
  for ((i = 0; i < 300; i++)); do
    url=$(sed -nE 's/^ *widget data +(http:[^ ]+).*/\1/p' "$work/out")
    [[ -n $url ]] && (exec 3<>"/dev/tcp/127.0.0.1/$base") 2>/dev/null && break
    url=""
    sleep 0.1
  done
  if [[ -z $url ]]; then
    echo "FAIL: quickstart did not come up: $(cat "$work/out")" >&2
    exit 1
  fi
  local failed=0 code
  code=$(curl -s --noproxy '*' --max-time 10 -o /dev/null -w '%{http_code}' "$url" || true)
  [[ $code == 200 ]] || { echo "FAIL: the widget data answered $code" >&2; failed=1; }
  kill -INT -- "-$pid"
  for ((i = 0; i < 400; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: quickstart still runs 40 s after Ctrl-C" >&2
    failed=1
  fi
  wait "$pid" || { echo "FAIL: quickstart exited $? on Ctrl-C" >&2; failed=1; }
  grep -q '"event":"stopped"' "$work/out" || { echo "FAIL: the gateway never logged stopped" >&2; failed=1; }
  if grep -E '"level":"(warn|error)"' "$work/out" >&2; then
    echo "FAIL: warnings or errors while stopping (above)" >&2
    failed=1
  fi
  local offset
  for offset in 0 1 999 1010; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$((base + offset))") 2>/dev/null; then
      echo "FAIL: port $((base + offset)) still listens after Ctrl-C" >&2
      failed=1
    fi
  done
  ((failed == 0)) || { cat "$work/out" >&2; exit 1; }
  echo "quickstart: Ctrl-C stopped the gateway, then the stub and Redis, without a warning"
}

case "$mode" in
  yamllint) check_yamllint ;;
  k8s) run_python_check k8s ;;
  references) run_python_check references ;;
  redis) run_python_check redis ;;
  shellcheck) check_shellcheck ;;
  systemd) check_systemd ;;
  runtime-libs) check_runtime_libs "$@" ;;
  healthcheck) check_healthcheck "$@" ;;
  quickstart) check_quickstart "$@" ;;
  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
