#!/usr/bin/env bash
# Brings this machine as close to a new one as can be done here, then runs the README's two
# commands (`npm run setup`, `npm test`) from a clean clone of this checkout's HEAD and prints
# their times and the count line. What it undoes is what setup and the tests leave behind:
# the daemons setup started, the Debian packages setup installs (purged, with what they pulled
# in), libvirt's and kvm2's directories, the deb-src entries setup adds, the users and groups
# setup makes, the Node.js it installs, the npm cache, and the tests' leftover bridges and
# temporary directories.
#
# Usage (as root; it purges packages and stops daemons): bash scripts/fresh-check.sh [--keep DIR]
#   --keep DIR  run in DIR (made empty) instead of a temporary directory, and keep it
# Exit status: that of `npm test` (setup failing exits 1).
set -uo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-check: run as root: it purges Debian packages, stops libvirtd and removes /var/lib/libvirt" >&2
  exit 1
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
work=""
keep=false
if [ "${1:-}" = "--keep" ]; then
  work=${2:?--keep needs a directory}
  keep=true
fi

log() { printf '[fresh-check] %s\n' "$*"; }

# Packages a new machine of this kind already has (see the machine's package list): setup
# lists them so it works elsewhere too, but purging them would make this machine older than new
# (and util-linux is Essential: apt refuses to purge it, and with it the whole list).
ON_A_NEW_MACHINE=(openssh-client procps dpkg-dev xz-utils util-linux iproute2)

log "stopping the daemons setup and the tests started"
for daemon in libvirtd virtlogd virtlockd dnsmasq redis-server qemu-system-x86_64 chromium; do
  pkill -x "$daemon" 2>/dev/null || true
done
pkill -f 'sshd -f /tmp/kvm2-sshd' 2>/dev/null || true # the tests' own sshd, never another
sleep 1
for daemon in libvirtd virtlogd virtlockd dnsmasq redis-server qemu-system-x86_64; do
  pkill -9 -x "$daemon" 2>/dev/null || true
done

mapfile -t packages < <(bash "$repo/scripts/setup.sh" --packages)
purge=()
for p in "${packages[@]}"; do
  [[ " ${ON_A_NEW_MACHINE[*]} " == *" $p "* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' && purge+=("$p")
done
if [ ${#purge[@]} -gt 0 ]; then
  log "purging ${purge[*]} (and what only they needed)"
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${purge[@]}" >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get autoremove --purge -y -qq >/dev/null
fi

log "removing libvirt's and kvm2's directories, setup's apt sources, users and groups"
rm -rf /var/log/libvirt /var/lib/libvirt /etc/libvirt /var/cache/libvirt /run/libvirt \
  /var/run/libvirt /var/cache/kvm2 /var/lib/kvm2
rm -f /etc/apt/sources.list.d/kvm2-deb-src.sources /etc/apt/sources.list.d/kvm2-deb-src.list
apt-get update -qq
userdel libvirt-qemu 2>/dev/null || true
for group in libvirt-qemu libvirt kvm; do groupdel "$group" 2>/dev/null || true; done
# The tests' isolated networks are bridges named kv…; a daemon killed mid-run leaves them.
for bridge in $(ip -br link show type bridge 2>/dev/null | awk '$1 ~ /^kv/ {print $1}'); do
  ip link delete "$bridge" 2>/dev/null || true
done
rm -rf /tmp/kvm2-* /tmp/libvirt-src
# The Node.js setup installed (scripts/node-runtime.sh), and its link ahead of the machine's.
if [ "$(readlink /usr/local/bin/node 2>/dev/null)" = /opt/kvm2/node-24/bin/node ]; then
  rm -f /usr/local/bin/node
fi
rm -rf /opt/kvm2
hash -r
npm cache clean --force >/dev/null 2>&1 || true

if [ -z "$work" ]; then work=$(mktemp -d /tmp/fresh-check.XXXXXX); fi
rm -rf "$work" && mkdir -p "$work"
log "cloning $(git -C "$repo" rev-parse --short HEAD) into $work"
git clone -q "$repo" "$work/kvm2"
cd "$work/kvm2" || exit 1

start=$(date +%s)
npm run setup >"$work/setup.log" 2>&1
setup_status=$?
setup_s=$(($(date +%s) - start))
log "npm run setup: exit $setup_status in ${setup_s} s (log: $work/setup.log)"
if [ "$setup_status" -ne 0 ]; then
  tail -n 30 "$work/setup.log"
  echo "0 passed, 1 failed"
  exit 1
fi

start=$(date +%s)
npm test >"$work/test.log" 2>&1
test_status=$?
test_s=$(($(date +%s) - start))
log "npm test: exit $test_status in ${test_s} s ($((test_s / 60)) min $((test_s % 60)) s; log: $work/test.log)"
sed 's/\x1b\[[0-9;]*m//g' "$work/test.log" | grep -E '^ +(Test Files|Tests|Duration) |^\[(typecheck|lint)\]'
count=$(node scripts/test-count.mjs --status "$test_status")
if [ "$keep" = false ] && [ "$test_status" -eq 0 ]; then rm -rf "$work"; fi
printf '%s\n' "$count"
exit "$test_status"
