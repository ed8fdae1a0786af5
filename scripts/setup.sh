#!/usr/bin/env bash
# Prepares a Debian 12 machine (as root, no systemd) to run kvm2 and its tests:
# Debian packages, the daemons kvm2 talks to (virtlogd, libvirtd, redis-server), a dir pool
# `default`, an isolated network `default`, the demo image, Node.js 24 and 22 from the npm
# registry (24 linked as the machine's node when its own is older than 22;
# scripts/node-runtime.sh), and the npm dependencies. Safe to run twice: every step checks before it acts.
# Facts behind each step: shared/HOST-SETUP.md.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }

PACKAGES=(
  # libvirt host (iptables must be present before libvirtd starts: it sets up chains at start)
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils ovmf
  iptables dnsmasq-base
  # test peers: OpenSSH server, Redis, libvirt's own C client for the benchmarks
  openssh-server openssh-client redis-server python3-libvirt
  # independent readers of the seed ISO (and cloud-init's own parser of it)
  genisoimage libarchive-tools cloud-init
  # the dashboard test's browser (driven by playwright-core; never a downloaded browser)
  chromium
  # validates docker-compose.yml (no Docker engine runs here)
  docker-compose
  procps
  # the test hosts of their own: namespaces (unshare, nsenter) and their bridges (ip)
  util-linux iproute2
  # unpacks libvirt's Debian source package (its .x protocol files) for the generator's check
  dpkg-dev xz-utils
  # builds the Debian cloud image (scripts/build-cloud-image.sh); virt-install for bench/guest
  debootstrap mtools dosfstools systemd-boot-efi virtinst
)

# `setup.sh --packages`: the list, one a line (scripts/fresh-check.sh purges them).
if [ "${1:-}" = "--packages" ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: run as root (it installs Debian packages and starts libvirtd)" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The users and groups the libvirt-daemon-system package would have made.
getent group kvm >/dev/null || groupadd --system kvm
getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
getent group libvirt >/dev/null || groupadd --system libvirt
id libvirt-qemu >/dev/null 2>&1 ||
  useradd --system --no-create-home --home-dir /var/lib/libvirt --shell /usr/sbin/nologin \
    -g libvirt-qemu -G kvm libvirt-qemu
# Every directory libvirt and the tests write to, made here rather than left to whichever
# daemon (re)start happens to make it: libvirtd started on a new machine does not make
# /var/log/libvirt/qemu, and every domain with a serial log file there then fails to start.
mkdir -p /var/log/libvirt/qemu /var/run/libvirt /var/lib/libvirt/images /var/lib/libvirt/qemu \
  /var/cache/libvirt/qemu /run/sshd /var/cache/kvm2
if [ -e /dev/kvm ]; then chgrp kvm /dev/kvm && chmod 660 /dev/kvm; fi

running() { pgrep -x "$1" >/dev/null 2>&1; }
wait_for() { # wait_for DESCRIPTION COMMAND...
  local what=$1; shift
  for _ in $(seq 1 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "setup: $what did not come up" >&2
  return 1
}

running virtlogd || { log "starting virtlogd"; virtlogd -d; }
if ! running libvirtd; then
  log "starting libvirtd"
  libvirtd -d
fi
wait_for "libvirtd" virsh -c qemu:///system version

if ! redis-cli -p 6379 ping >/dev/null 2>&1; then
  log "starting redis-server on 127.0.0.1:6379"
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save '' --appendonly no \
    --maxmemory-policy noeviction
  wait_for "redis-server" redis-cli -p 6379 ping
fi

# The dir pool `default` that the embedded configuration names.
if ! virsh -q pool-info default >/dev/null 2>&1; then
  log "defining pool default at /var/lib/libvirt/images"
  virsh -q pool-define-as default dir --target /var/lib/libvirt/images >/dev/null
fi
# (No `virsh … | grep -q`: under pipefail, grep's early exit fails the pipeline.)
pool_state=$(virsh -q pool-info default | awk '/^State:/ {print $2}')
[ "$pool_state" = running ] || virsh -q pool-start default >/dev/null
virsh -q pool-autostart default >/dev/null 2>&1 || true

# The network `default` the embedded configuration names, unless the machine has one: isolated
# (no forward, no host address, no DHCP or DNS: a bridge only), so a demo guest's packets go
# nowhere but its own bridge. The quick start gives the guest its address (README).
if ! virsh -q net-info default >/dev/null 2>&1; then
  log "defining network default (isolated: bridge kvm2br0 only)"
  net_xml=$(mktemp)
  cat >"$net_xml" <<'XML'
<network>
  <name>default</name>
  <bridge name='kvm2br0' stp='off'/>
  <dns enable='no'/>
</network>
XML
  virsh -q net-define "$net_xml" >/dev/null
  rm -f "$net_xml"
fi
net_active=$(virsh -q net-info default | awk '/^Active:/ {print $2}')
[ "$net_active" = yes ] || virsh -q net-start default >/dev/null
virsh -q net-autostart default >/dev/null 2>&1 || true

# The image `demo` the embedded configuration names: kvm2's test guest (docs/guest-image.md),
# built from Debian packages (cached in /var/cache/kvm2), installed where the default points.
DEMO_IMAGE=/var/lib/kvm2/images/demo.qcow2
demo_built=$(bash scripts/build-guest-image.sh)
if ! cmp -s "$demo_built" "$DEMO_IMAGE"; then
  log "installing the demo image at $DEMO_IMAGE"
  mkdir -p "$(dirname "$DEMO_IMAGE")"
  cp "$demo_built" "$DEMO_IMAGE.tmp" && mv "$DEMO_IMAGE.tmp" "$DEMO_IMAGE"
fi

# libvirt's protocol definitions (remote_protocol.x and friends) from Debian's source package
# of the installed libvirt, for the check that src/libvirt/protocol.gen.ts is what the
# generator makes of them (test/unit/protocol-gen.test.ts). Kept in /var/cache/kvm2, reached
# through the link `installed`; only the files the generator reads are kept.
LIBVIRT_SRC_ROOT=/var/cache/kvm2/libvirt-src
libvirt_version=$(dpkg-query -W -f='${source:Version}' libvirt-daemon)
src_dir="$LIBVIRT_SRC_ROOT/$libvirt_version"
if [ ! -f "$src_dir/tree/src/remote/remote_protocol.x" ]; then
  log "fetching Debian's libvirt source package $libvirt_version (its .x protocol files)"
  # (Captured, not piped to grep -q: under pipefail, grep's early exit fails the pipeline.)
  uris=$(apt-get source --print-uris -qq "libvirt=$libvirt_version" 2>/dev/null || true)
  if [ -z "$uris" ]; then
    # The machine's apt sources carry only binary packages: the same archives, as deb-src.
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        >/etc/apt/sources.list.d/kvm2-deb-src.sources
    else
      sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/kvm2-deb-src.list
    fi
    apt-get update -qq
  fi
  scratch=$(mktemp -d "$LIBVIRT_SRC_ROOT.XXXXXX")
  (cd "$scratch" && apt-get source -qq "libvirt=$libvirt_version" >/dev/null 2>&1) || {
    rm -rf "$scratch"
    echo "setup: apt-get source libvirt=$libvirt_version failed" >&2
    exit 1
  }
  tree=$(find "$scratch" -mindepth 1 -maxdepth 1 -type d -name 'libvirt-*' | head -n 1)
  rm -rf "$src_dir" && mkdir -p "$src_dir/tree/src"
  cp "$tree/meson.build" "$src_dir/tree/"
  cp -r "$tree/src/remote" "$tree/src/rpc" "$src_dir/tree/src/"
  rm -rf "$scratch"
fi
ln -sfn "$libvirt_version/tree" "$LIBVIRT_SRC_ROOT/installed"

# Node.js 24 (and 22 for the unit suite's second run) when the machine's is older than 22.
bash scripts/node-runtime.sh

if [ -f package-lock.json ]; then
  # Native addons (ssh2's crypto binding) must build against the headers of the node that will
  # load them. This machine's ~/.npmrc gives node-gyp `nodedir=/usr`, Debian's Node 20 headers,
  # and an addon built so fails to load on 24 ("Module did not self-register"; ssh2 then falls
  # back to slower JavaScript ciphers). The running node's own headers, when it has them, win.
  node_prefix=$(node -p 'require("node:path").resolve(process.execPath, "../..")')
  if grep -qs "define NODE_MAJOR_VERSION $(node -p 'process.versions.node.split(".")[0]')\$" \
    "$node_prefix/include/node/node_version.h"; then
    export npm_config_nodedir=$node_prefix
  fi
  log "npm ci (native addons against the headers in ${npm_config_nodedir:-the configured nodedir})"
  npm ci --no-audit --no-fund --loglevel=error
fi
log "ready: libvirt $(virsh -c qemu:///system version | awk '/Using library/ {print $NF}'), redis $(redis-cli -p 6379 info server | awk -F: '/redis_version/ {print $2}' | tr -d '\r')"
