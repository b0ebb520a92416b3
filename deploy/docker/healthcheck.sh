#!/usr/bin/env bash
# Container health check: GET http://127.0.0.1:PORT/PATH must answer 200; exit 0 or 1.
#   widget-gateway-healthcheck [PORT] [PATH]     (default: 9090 /healthz, the admin listener)
# Uses bash's /dev/tcp so that the runtime image needs no HTTP client. The caller bounds the
# connect (HEALTHCHECK --timeout); the read is bounded here.
set -uo pipefail

port=${1:-9090}
path=${2:-/healthz}

if ! exec 3<>"/dev/tcp/127.0.0.1/$port"; then
  echo "healthcheck: cannot connect to 127.0.0.1:$port" >&2
  exit 1
fi
printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$path" >&3
status_line=
if ! IFS= read -r -t 2 status_line <&3; then
  echo "healthcheck: no answer from 127.0.0.1:$port$path" >&2
  exit 1
fi
exec 3<&-
if [[ $status_line != "HTTP/1."[01]" 200 "* ]]; then
  echo "healthcheck: 127.0.0.1:$port$path answered: ${status_line%$'\r'}" >&2
  exit 1
fi
exit 0
