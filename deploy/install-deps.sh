#!/usr/bin/env bash
# Installs what widget-gateway needs to build, test and run locally, from Debian packages only.
# Idempotent: packages already present are not touched, and apt is not called at all when
# nothing is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ca-certificates openssl curl
  # A faster linker, and a compiler cache that a machine keeping its home directory reuses.
  mold ccache
  libboost1.81-dev libboost-url1.81-dev libboost-test1.81-dev libboost-program-options1.81-dev
  libhiredis-dev libsimdjson-dev libtomlplusplus-dev libssl-dev zlib1g-dev libbrotli-dev
  libnghttp2-dev
  redis-server
  # The Debian package (deploy/debian): CPack reads its dependencies with dpkg-shlibdeps and file.
  dpkg-dev file
)
# Extra groups, selected by the caller: tools used only by some tests or the bench harness.
for group in "$@"; do
  case "$group" in
    --test-tools)
      packages+=(prometheus yamllint shellcheck python3-yaml clang libclang-rt-14-dev)
      # Real clients in front of the gateway: a headless browser on another origin (driven by
      # playwright-core from npm) and nginx as a caching CDN.
      packages+=(chromium nginx-light nghttp2-client)
      # A gateway whose host clock is off (days ahead or behind): libfaketime preloaded into it.
      packages+=(libfaketime faketime)
      # Node.js and npm run a client-side HTTP cache library in the integration tests. A machine
      # may have them from elsewhere already (a nodejs package that bundles npm and conflicts
      # with Debian's), so Debian's are asked for only when the commands are missing.
      command -v node >/dev/null 2>&1 || packages+=(nodejs)
      command -v npm >/dev/null 2>&1 || packages+=(npm)
      ;;
    --bench-tools) packages+=(nginx-light varnish gnuplot-nox util-linux valgrind python3 wrk
      libhttp-parser-dev) ;;
    *) echo "install-deps: unknown option $group" >&2; exit 2 ;;
  esac
done

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
