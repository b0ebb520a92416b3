#!/usr/bin/env bash
# The Debian package as an operator gets it: packed by CPack from an already built tree (nothing
# is compiled here), installed with dpkg -i without starting anything, the binary and the
# packaged config checked, reinstalled over an edited conffile, then purged.
#   tests/deploy/check-package.sh BUILD_DIR
# Exit 0 = passed, 1 = failed, 77 = skipped (not root, or the host already has a widget-gateway
# installation that the purge would delete).
set -euo pipefail

build_dir=${1:-}
if [[ ! -f $build_dir/CPackConfig.cmake || ! -x $build_dir/bin/widget-gateway ]]; then
  echo "FAIL: no built tree with a package configuration in ${build_dir:-(none given)}" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIPPED: installing a package needs root (dpkg -i); CI runs as root"
  exit 77
fi
for tool in cpack:cmake dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev file:file; do
  if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
    echo "FAIL: ${tool%%:*} is not installed: run deploy/install-deps.sh (package ${tool#*:})" >&2
    exit 1
  fi
done

package=widget-gateway
conffile=/etc/widget-gateway/widget-gateway.toml
units=(/usr/lib/systemd/system/widget-gateway.service /usr/lib/systemd/system/widget-gateway@.service)
# Everything the package or its units own on a host: the purge at the end deletes it, so a host
# that has any of it (a manual installation, deploy/README.md) is left alone.
owned=(/usr/bin/widget-gateway /etc/widget-gateway /var/lib/widget-gateway
  /var/lib/private/widget-gateway /var/log/widget-gateway /var/log/private/widget-gateway
  "${units[@]}")
# dpkg forgets a purged package, or keeps it as "... not-installed".
known_to_dpkg() { dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -qv 'not-installed$'; }
if known_to_dpkg; then
  echo "SKIPPED: the $package package is known to dpkg on this host; not touching it"
  exit 77
fi
for path in "${owned[@]}"; do
  if [[ -e $path || -L $path ]]; then
    echo "SKIPPED: $path exists on this host (an installation the purge would delete)"
    exit 77
  fi
done

work=$(mktemp -d)
installed=0
policy_created=0
# None of the owned paths existed before: whatever of them is left at the end, this test made.
cleanup() {
  if ((installed)); then dpkg --purge "$package" >/dev/null 2>&1 || true; fi
  rm -rf "${owned[@]}"
  if ((policy_created)); then rm -f /usr/sbin/policy-rc.d; fi
  rm -rf "$work"
}
trap cleanup EXIT

failed=0
passed=0
check() {
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "FAIL: $what" >&2
    failed=$((failed + 1))
  fi
}

# Services stay down during the test even where systemd runs: policy-rc.d answering 101 makes
# deb-systemd-invoke (and invoke-rc.d) refuse every start. A host's own policy is kept.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  policy_created=1
fi

version=$("$build_dir/bin/widget-gateway" --version | awk '{ print $2 }')
deb=$work/${package}_${version}_amd64.deb
if ! timeout 300 cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work" \
  >"$work/cpack.log" 2>&1; then
  echo "FAIL: cpack failed:" >&2
  cat "$work/cpack.log" >&2
  exit 1
fi
if [[ ! -f $deb ]]; then
  echo "FAIL: cpack made no $(basename "$deb"); it made: $(cd "$work" && ls ./*.deb 2>/dev/null)" >&2
  exit 1
fi
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's#^\.##')
has_path() { grep -qxF "$1" <<<"$contents"; }
check "the package must hold /usr/bin/widget-gateway" has_path /usr/bin/widget-gateway
check "the package must hold $conffile" has_path "$conffile"
for unit in "${units[@]}"; do check "the package must hold $unit" has_path "$unit"; done
lacks_stub() { ! grep -q widget-upstream-stub <<<"$contents"; }
check "the stub upstream has no place in the production package" lacks_stub
check "the package's version must be the binary's ($version)" \
  test "$(dpkg-deb -f "$deb" Version)" = "$version"
depends=$(dpkg-deb -f "$deb" Depends)
from_shlibdeps() { [[ $depends == *libhiredis* && $depends == *libssl* && $depends == *libc6* ]]; }
check "Depends must come from dpkg-shlibdeps (libhiredis, libssl, libc6), got: $depends" \
  from_shlibdeps
mkdir "$work/control"
dpkg-deb -e "$deb" "$work/control"
check "$conffile must be the package's only conffile" \
  test "$(cat "$work/control/conffiles" 2>/dev/null)" = "$conffile"

installed=1
if ! timeout 120 dpkg -i "$deb" </dev/null >"$work/install.log" 2>&1; then
  echo "FAIL: dpkg -i failed:" >&2
  cat "$work/install.log" >&2
  exit 1
fi
check "dpkg must list $package as installed" \
  test "$(dpkg-query -W -f='${Status}' "$package")" = "install ok installed"
listed_as_conffile() {
  dpkg-query -W -f='${Conffiles}\n' "$package" | grep -q "^ $conffile [0-9a-f]\{32\}$"
}
check "dpkg must list $conffile as a conffile" listed_as_conffile
check "/usr/bin/widget-gateway --version must print 'widget-gateway $version'" \
  test "$(/usr/bin/widget-gateway --version)" = "widget-gateway $version"
for unit in "${units[@]}"; do
  check "$unit must run /usr/bin/widget-gateway" grep -qx 'ExecStart=/usr/bin/widget-gateway' "$unit"
done
none_enabled() { ! compgen -G '/etc/systemd/system/*.wants/widget-gateway*' >/dev/null; }
none_running() { ! pgrep -f '^/usr/bin/widget-gateway( |$)' >/dev/null; }
check "no unit may be enabled by the installation" none_enabled
check "no /usr/bin/widget-gateway may run after the installation" none_running

# The packaged config with the plain unit's environment, as the service would start with it
# (env -i: none of this shell's WG_* variables). The state file lies in the StateDirectory.
mapfile -t unit_env < <(sed -n 's/^Environment=//p' "${units[0]}")
if env -i PATH=/usr/bin:/bin "${unit_env[@]}" /usr/bin/widget-gateway --config "$conffile" \
  --check-config >"$work/effective.toml" 2>"$work/check.err"; then
  passed=$((passed + 1))
  check "the service's quota.state_file must lie in /var/lib/widget-gateway/" \
    grep -qx 'state_file = "/var/lib/widget-gateway/quota.state"' "$work/effective.toml"
else
  echo "FAIL: --check-config rejected the packaged config: $(cat "$work/check.err")" >&2
  failed=$((failed + 1))
fi
verifies_silently() { [[ -z $(systemd-analyze verify "$1" 2>&1) ]]; }
if command -v systemd-analyze >/dev/null 2>&1; then
  for unit in "${units[0]}" /usr/lib/systemd/system/widget-gateway@a.service; do
    # verify prints nothing for a sound unit (it exits 0 even on unknown keys).
    check "systemd-analyze verify $(basename "$unit") must print nothing" verifies_silently "$unit"
  done
fi

# An upgrade (here the same package again) keeps an edited conffile, without asking.
echo '# edited by the operator' >>"$conffile"
if timeout 120 dpkg -i "$deb" </dev/null >"$work/reinstall.log" 2>&1; then
  passed=$((passed + 1))
  check "a reinstallation must keep the edited $conffile" \
    grep -qx '# edited by the operator' "$conffile"
else
  echo "FAIL: dpkg -i over an edited conffile failed: $(cat "$work/reinstall.log")" >&2
  failed=$((failed + 1))
fi

# What the units make at run time, made here by hand as systemd makes it for a DynamicUser
# service (state under private/, behind a link): the purge must delete it with the package.
mkdir -p /var/lib/private/widget-gateway /var/log/widget-gateway
ln -s private/widget-gateway /var/lib/widget-gateway
: >/var/lib/private/widget-gateway/quota.state
if timeout 120 dpkg --purge "$package" </dev/null >"$work/purge.log" 2>&1; then
  installed=0
  passed=$((passed + 1))
else
  echo "FAIL: dpkg --purge failed: $(cat "$work/purge.log")" >&2
  failed=$((failed + 1))
fi
absent() { [[ ! -e $1 && ! -L $1 ]]; }
not_known_to_dpkg() { ! known_to_dpkg; }
check "dpkg must not know $package after the purge" not_known_to_dpkg
for path in "${owned[@]}"; do
  check "$path must be gone after the purge" absent "$path"
done

echo "$passed passed, $failed failed"
((failed == 0))
