#!/usr/bin/env bash
# Builds kvm2's test guest: a small UEFI-bootable qcow2 made from Debian packages alone
# (docs/guest-image.md). The guest boots Debian's cloud kernel through systemd-boot on the
# fallback EFI path, runs a busybox init from its initramfs that reads the NoCloud seed
# (label `cidata`), sets the hostname, applies the address from network-config, reports what it
# read on the serial console and runs qemu-guest-agent on its virtio port.
#
# Usage: scripts/build-guest-image.sh [--force]
#   stdout: the image's path (one line); stderr: progress and the build time.
#   KVM2_CACHE (default /var/cache/kvm2): the image lives in $KVM2_CACHE/guest-image/<key>/,
#   key = sha256 of this script and the versions of every package the image is made from, so a
#   second run is instant and any change to either makes a new image. --force rebuilds anyway.
#
# Packages are fetched with `apt-get download` and unpacked with `dpkg -x` into a scratch
# directory: nothing is installed on the host. Host tools: apt-get, dpkg, sfdisk (fdisk),
# qemu-img (qemu-utils), ldd (libc-bin), gzip, flock, sha256sum. The initramfs's cpio and
# modules.dep are made by the downloaded static busybox; mformat/mmd/mcopy come from the
# downloaded mtools package.
set -euo pipefail

readonly SCRIPT_PATH="$(readlink -f "${BASH_SOURCE[0]}")"
readonly CACHE_ROOT="${KVM2_CACHE:-/var/cache/kvm2}/guest-image"
readonly KEEP_BUILDS=3
readonly DISK_MIB=64
readonly ESP_OFFSET_MIB=1
# The modules the guest loads (with their dependencies, resolved from modules.dep): virtio
# transport, disks, NIC, console ports (the agent's channel), entropy, and iso9660 for the seed.
readonly GUEST_MODULES=(virtio_pci virtio_blk virtio_net virtio_console virtio-rng isofs)
# Host-side libraries of qemu-ga come from these packages when the host lacks one.
readonly AGENT_LIB_PACKAGES=(libglib2.0-0 libnuma1 libudev1 liburing2 libpcre2-8-0)

force=0
case "${1:-}" in
  --force) force=1 ;;
  '') ;;
  *)
    echo "usage: $0 [--force]" >&2
    exit 2
    ;;
esac

log() { printf 'build-guest-image: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
now_ms() { date +%s%3N; }
started="$(now_ms)"

apt_quiet() {
  # APT::Sandbox::User=root: the scratch dir is not readable by _apt; without it apt warns.
  apt-get -q -o APT::Sandbox::User=root "$@"
}

for tool in apt-get apt-cache dpkg dpkg-query sfdisk qemu-img ldd gzip flock sha256sum; do
  command -v "$tool" > /dev/null || die "$tool is missing (Debian packages: apt, dpkg, fdisk, qemu-utils, libc-bin, gzip, util-linux, coreutils)"
done

# What apt would download now, in one apt-cache call (each call reads every package list, over a
# second here): "Package Version Depends" per package. The cloud kernel's metapackage depends on
# exactly one versioned image package of its own version, e.g. linux-image-6.1.0-57-cloud-amd64.
readonly WANTED=(linux-image-cloud-amd64 busybox-static systemd-boot-efi qemu-guest-agent mtools)
candidates() {
  apt-cache show --no-all-versions "${WANTED[@]}" 2> /dev/null | awk '
    /^Package: / { pkg = $2 }
    /^Version: / { ver[pkg] = $2 }
    /^Depends: / { dep[pkg] = substr($0, 10) }
    END { for (p in ver) print p, ver[p], dep[p] }'
}
listing="$(candidates)"
if [[ "$(wc -l <<< "$listing")" -lt ${#WANTED[@]} ]]; then
  log 'apt lists are missing packages: apt-get update'
  apt_quiet update >&2
  listing="$(candidates)"
fi
declare -A version=()
while read -r pkg ver _; do version[$pkg]="$ver"; done <<< "$listing"
for pkg in "${WANTED[@]}"; do
  [[ -n "${version[$pkg]:-}" ]] || die "apt knows no candidate version of $pkg"
done
kernel_pkg="$(awk '$1 == "linux-image-cloud-amd64"' <<< "$listing" \
  | grep -o 'linux-image-[0-9][^ ,]*-cloud-amd64' | head -n1 || true)"
[[ -n "$kernel_pkg" ]] || die 'cannot resolve linux-image-cloud-amd64 to a kernel image package'
readonly KERNEL_VERSION="${kernel_pkg#linux-image-}"
version[$kernel_pkg]="${version[linux-image-cloud-amd64]}"
readonly PACKAGES=("$kernel_pkg" busybox-static systemd-boot-efi qemu-guest-agent mtools)

# The key: this script, the downloaded packages' versions, and the host's versions of the
# packages qemu-ga's libraries are copied from.
key="$(
  {
    sha256sum < "$SCRIPT_PATH"
    for pkg in "${PACKAGES[@]}"; do echo "$pkg=${version[$pkg]}"; done
    for pkg in libc6 "${AGENT_LIB_PACKAGES[@]}"; do
      echo "host:$pkg=$(dpkg-query -W -f '${Version}' "$pkg:amd64" 2> /dev/null || echo none)"
    done
  } | sha256sum | cut -c1-16
)"
readonly IMAGE_DIR="$CACHE_ROOT/$key"
readonly IMAGE="$IMAGE_DIR/guest.qcow2"

mkdir -p "$CACHE_ROOT"
# One build at a time per cache, across processes; a waiter then finds the image built.
exec 9> "$CACHE_ROOT/.lock"
flock 9

if [[ $force -eq 0 && -f "$IMAGE" && -f "$IMAGE_DIR/build.json" ]]; then
  built_ms="$(sed -n 's/.*"buildMs": *\([0-9]*\).*/\1/p' "$IMAGE_DIR/build.json")"
  log "cached: $IMAGE (built in $((built_ms / 1000)).$(printf '%03d' $((built_ms % 1000))) s)"
  echo "$IMAGE"
  exit 0
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/kvm2-guest-image.XXXXXX")"
work='' # the image's directory until it is complete, under the cache root
cleanup() { rm -rf "$scratch" ${work:+"$work"}; }
trap cleanup EXIT

debs="$scratch/debs"
pkgroot="$scratch/pkgroot" # the unpacked packages
initrd="$scratch/initrd"   # the initramfs tree
mkdir -p "$debs" "$pkgroot" "$initrd"

log "downloading ${PACKAGES[*]}"
pins=()
for pkg in "${PACKAGES[@]}"; do pins+=("$pkg=${version[$pkg]}"); done
(cd "$debs" && apt_quiet download "${pins[@]}" >&2)
for deb in "$debs"/*.deb; do dpkg -x "$deb" "$pkgroot"; done

busybox="$pkgroot/bin/busybox"
mtools="$pkgroot/usr/bin/mtools"
vmlinuz="$pkgroot/boot/vmlinuz-$KERNEL_VERSION"
sdboot="$pkgroot/usr/lib/systemd/boot/efi/systemd-bootx64.efi"
qemu_ga="$pkgroot/usr/sbin/qemu-ga"
for file in "$busybox" "$mtools" "$vmlinuz" "$sdboot" "$qemu_ga"; do
  [[ -f "$file" ]] || die "missing after unpacking: ${file#"$pkgroot"}"
done
# mtools reads no config here and skips its floppy-geometry sanity checks on image files.
export MTOOLSRC=/dev/null MTOOLS_SKIP_CHECK=1
mt() { "$mtools" -c "$@"; }

# --- initramfs tree ---------------------------------------------------------------------------
mkdir -p "$initrd"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,mnt/seed,etc/kvm2,var,root}
ln -s ../run "$initrd/var/run"
cp "$busybox" "$initrd/bin/busybox"
# One symlink per applet, at the path busybox itself lists (bin/sh, sbin/ip, usr/bin/awk, ...).
while read -r applet; do
  [[ "$applet" == bin/busybox || -e "$initrd/$applet" ]] && continue
  mkdir -p "$initrd/$(dirname "$applet")"
  ln -s /bin/busybox "$initrd/$applet"
done < <("$busybox" --list-full)

# Modules: resolve GUEST_MODULES through modules.dep (written by busybox's depmod) into a load
# order where every module follows its dependencies; copy just those.
moddir="$pkgroot/lib/modules/$KERNEL_VERSION"
[[ -d "$moddir" ]] || die "no modules for $KERNEL_VERSION"
"$busybox" depmod -b "$pkgroot" "$KERNEL_VERSION"
declare -A mod_path=() mod_deps=() mod_seen=()
while IFS= read -r line; do
  path="${line%%:*}"
  name="$(basename "$path" .ko)"
  mod_path[$name]="$path"
  mod_deps[$name]="${line#*:}"
done < "$moddir/modules.dep"
load_order=()
resolve() {
  local name="$1" dep
  [[ -n "${mod_seen[$name]:-}" ]] && return 0
  mod_seen[$name]=1
  [[ -n "${mod_path[$name]:-}" ]] || die "module $name is not in modules.dep"
  for dep in ${mod_deps[$name]}; do resolve "$(basename "$dep" .ko)"; done
  load_order+=("${mod_path[$name]}")
}
for module in "${GUEST_MODULES[@]}"; do resolve "$module"; done
mkdir -p "$initrd/lib/modules"
: > "$initrd/etc/kvm2/modules"
for path in "${load_order[@]}"; do
  cp "$moddir/$path" "$initrd/lib/modules/"
  echo "$(basename "$path")" >> "$initrd/etc/kvm2/modules"
done
log "modules: $(tr '\n' ' ' < "$initrd/etc/kvm2/modules")"

# qemu-ga and the libraries ldd names. They come from the host (Debian 12, as the guest's
# packages); a library the host lacks comes from its downloaded package instead.
cp "$qemu_ga" "$initrd/usr/sbin/qemu-ga"
agent_libs() { LD_LIBRARY_PATH="${1:-}" ldd "$qemu_ga"; }
if agent_libs | grep -q 'not found'; then
  log "host lacks some of qemu-ga's libraries; downloading ${AGENT_LIB_PACKAGES[*]}"
  mkdir -p "$scratch/libdebs" "$scratch/libroot"
  (cd "$scratch/libdebs" && apt_quiet download "${AGENT_LIB_PACKAGES[@]}" >&2)
  for deb in "$scratch/libdebs"/*.deb; do dpkg -x "$deb" "$scratch/libroot"; done
  libpath="$scratch/libroot/lib/x86_64-linux-gnu:$scratch/libroot/usr/lib/x86_64-linux-gnu"
else
  libpath=''
fi
ldd_out="$(agent_libs "$libpath")"
if grep -q 'not found' <<< "$ldd_out"; then die "qemu-ga's libraries not found: $ldd_out"; fi
mkdir -p "$initrd/lib/x86_64-linux-gnu" "$initrd/lib64"
while read -r lib; do
  case "$lib" in
    */ld-linux-x86-64.so.2) cp -L "$lib" "$initrd/lib64/ld-linux-x86-64.so.2" ;;
    *) cp -L "$lib" "$initrd/lib/x86_64-linux-gnu/$(basename "$lib")" ;;
  esac
done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<< "$ldd_out")
log "qemu-ga libraries: $(ls "$initrd/lib/x86_64-linux-gnu" | tr '\n' ' ')"

# qemu-ga's guest-shutdown runs /sbin/shutdown -P|-r|-H +0 ...; there is no init to signal.
rm -f "$initrd/sbin/shutdown"
cat > "$initrd/sbin/shutdown" << 'EOF'
#!/bin/sh
sync
case " $* " in
  *' -r '*) exec reboot -f ;;
  *' -H '*) exec halt -f ;;
  *) exec poweroff -f ;;
esac
EOF

# udhcpc's hook, for network-config that asks for DHCP (or no network-config at all).
mkdir -p "$initrd/etc/udhcpc"
cat > "$initrd/etc/udhcpc/script" << 'EOF'
#!/bin/sh
case "$1" in
  deconfig) ip -4 addr flush dev "$interface"; ip link set "$interface" up ;;
  bound | renew)
    ip -4 addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    for gw in $router; do ip route replace default via "$gw" dev "$interface"; break; done
    echo "kvm2-guest: address=$ip/${mask:-24} interface=$interface source=dhcp" > /dev/console
    ;;
esac
exit 0
EOF

# network-config → shell assignments (NC_*), the subset docs/guest-image.md describes: the first
# IPv4 address (v2 `addresses:` list or flow list, or v1 `address:` with a /prefix or a
# `netmask:`), the first gateway (`gateway4:`, v1 `gateway:`, or a default route's `via:`),
# DHCP (`dhcp4: true`, v1 `type: dhcp`/`dhcp4`), and the interface named by the first key under
# `ethernets:` (v2) or the first `name:` (v1). Values are checked against strict patterns so
# the init can eval the output.
cat > "$initrd/etc/kvm2/network-config.awk" << 'EOF'
BEGIN { eth_indent = -1; ns_indent = -1; in_list = 0 }
function clean(v) {
  sub(/^[ \t]*-?[ \t]*[A-Za-z0-9_-]+:[ \t]*/, "", v)
  gsub(/["' \t]/, "", v)
  return v
}
function indent(s) { match(s, /^[ \t]*/); return RLENGTH }
function take_addr(v) {
  if (addr == "" && v ~ /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+(\/[0-9]+)?$/) addr = v
}
{
  line = $0
  sub(/[ \t]+#.*$/, "", line); sub(/^[ \t]*#.*$/, "", line)
  if (line ~ /^[ \t]*$/) next
  ind = indent(line)
  if (in_list && !(ind >= list_indent && line ~ /^[ \t]*-/)) in_list = 0
  # nameservers: { addresses: [...], search: [...] } holds no interface address.
  if (ns_indent >= 0 && ind > ns_indent) next
  ns_indent = -1
  if (line ~ /^[ \t]*-?[ \t]*nameservers:[ \t]*$/) { ns_indent = ind; next }
  if (in_list) { v = line; sub(/^[ \t]*-[ \t]*/, "", v); gsub(/["' \t]/, "", v); take_addr(v); next }
  if (eth_indent >= 0 && ind <= eth_indent) eth_indent = -1
  if (eth_indent >= 0 && iface == "" && line ~ /^[ \t]*[A-Za-z0-9_.-]+:[ \t]*$/) {
    v = line; gsub(/[ \t:]/, "", v); iface = v
  }
  if (line ~ /^[ \t]*ethernets:[ \t]*$/) { eth_indent = ind; next }
  if (line ~ /^[ \t]*-?[ \t]*addresses:[ \t]*$/) { in_list = 1; list_indent = ind; next }
  if (line ~ /^[ \t]*-?[ \t]*addresses:[ \t]*\[/) {
    v = line; sub(/^[^\[]*\[/, "", v); sub(/\].*$/, "", v); gsub(/["' \t]/, "", v)
    n = split(v, parts, ","); for (i = 1; i <= n; i++) take_addr(parts[i])
    next
  }
  if (line ~ /^[ \t]*-?[ \t]*address:/) { take_addr(clean(line)); next }
  if (line ~ /^[ \t]*-?[ \t]*netmask:/ && netmask == "") { netmask = clean(line); next }
  if (line ~ /^[ \t]*-?[ \t]*(gateway4|gateway|via):/ && gw == "") { gw = clean(line); next }
  if (line ~ /^[ \t]*-?[ \t]*dhcp4:[ \t]*(true|yes|on)[ \t]*$/) { dhcp = 1; next }
  if (line ~ /^[ \t]*-?[ \t]*type:[ \t]*["']?dhcp4?["']?[ \t]*$/) { dhcp = 1; next }
  if (line ~ /^[ \t]*-?[ \t]*name:/ && iface == "") { iface = clean(line); next }
}
END {
  prefix = ""
  if (addr ~ /\//) { prefix = addr; sub(/^.*\//, "", prefix); sub(/\/.*$/, "", addr) }
  else if (addr != "" && netmask ~ /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/) {
    split(netmask, o, "."); prefix = 0
    for (i = 1; i <= 4; i++) for (b = 128; b >= 1; b /= 2) if (o[i] >= b) { prefix++; o[i] -= b }
  }
  else if (addr != "") prefix = 24
  if (iface !~ /^[A-Za-z0-9_.-]+$/) iface = ""
  if (gw !~ /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/) gw = ""
  if (addr != "" && (prefix !~ /^[0-9]+$/ || prefix > 32)) addr = ""
  printf "NC_IFACE='%s' NC_ADDR='%s' NC_PREFIX='%s' NC_GW='%s' NC_DHCP='%s'\n", iface, addr, prefix, gw, dhcp
}
EOF

cat > "$initrd/init" << 'EOF'
#!/bin/sh
# kvm2 test guest init (PID 1, busybox sh). Reads the NoCloud seed, reports on the serial
# console, applies the address and supervises qemu-guest-agent. Built by
# scripts/build-guest-image.sh; docs/guest-image.md.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs tmpfs /tmp
exec < /dev/console > /dev/console 2>&1

say() { echo "kvm2-guest: $*"; }
say "init started (kernel $(uname -r))"
# From here on only kernel errors reach the console, so driver chatter (virtio probes, the GPT
# warning on an overlay larger than the image) cannot split the lines below; dmesg has it all.
dmesg -n 4

for module in $(cat /etc/kvm2/modules); do
  insmod "/lib/modules/$module" || say "insmod $module failed"
done

# The seed: the block device whose ISO 9660 primary volume descriptor (sector 16, 2048-byte
# sectors) holds `CD001` at byte 32769 and the volume id `cidata` at byte 32808.
seed=''
tries=0
while [ -z "$seed" ] && [ $tries -lt 200 ]; do
  for dev in /dev/vd[a-z] /dev/sr[0-9]; do
    [ -b "$dev" ] || continue
    magic="$(dd if="$dev" bs=1 skip=32769 count=5 2>/dev/null)"
    [ "$magic" = CD001 ] || continue
    label="$(dd if="$dev" bs=8 skip=4101 count=4 2>/dev/null | tr -d ' \000')"
    case "$label" in cidata | CIDATA) seed="$dev"; break ;; esac
  done
  [ -n "$seed" ] || { usleep 100000; tries=$((tries + 1)); }
done

# A YAML scalar: plain, 'single' or "double" quoted (with \" and \\ unescaped).
yaml_value() {
  sed -n "s/^$1:[[:space:]]*//p" "$2" | head -n 1 | sed -e 's/[[:space:]]*$//' \
    -e 's/^"\(.*\)"$/\1/' -e "s/^'\\(.*\\)'\$/\\1/" -e 's/\\"/"/g' -e 's/\\\\/\\/g'
}

if [ -z "$seed" ]; then
  say "seed=none (no cidata volume found)"
elif ! mount -t iso9660 -o ro "$seed" /mnt/seed; then
  say "seed=$seed mount failed"
  seed=''
else
  say "seed=$seed"
fi

if [ -n "$seed" ] && [ -f /mnt/seed/meta-data ]; then
  instance_id="$(yaml_value instance-id /mnt/seed/meta-data)"
  hostname="$(yaml_value local-hostname /mnt/seed/meta-data)"
  say "instance-id=$instance_id"
  if [ -n "$hostname" ]; then
    hostname "$hostname"
    echo "$hostname" > /etc/hostname
  fi
  say "hostname=$(hostname)"
fi

# The first ethernet-like interface: the guest has exactly one NIC.
first_nic() {
  for dev in /sys/class/net/*; do
    name="${dev##*/}"
    [ "$name" = lo ] && continue
    [ -e "$dev/device" ] && { echo "$name"; return; }
  done
}
ip link set lo up
nic=''
tries=0
while [ -z "$nic" ] && [ $tries -lt 100 ]; do
  nic="$(first_nic)"
  [ -n "$nic" ] || { usleep 100000; tries=$((tries + 1)); }
done

NC_IFACE='' NC_ADDR='' NC_PREFIX='' NC_GW='' NC_DHCP=''
if [ -n "$seed" ] && [ -f /mnt/seed/network-config ]; then
  eval "$(awk -f /etc/kvm2/network-config.awk /mnt/seed/network-config)"
else
  NC_DHCP=1
fi
[ -n "$NC_IFACE" ] && [ -e "/sys/class/net/$NC_IFACE" ] && nic="$NC_IFACE"
if [ -z "$nic" ]; then
  say "network=none (no NIC)"
elif [ -n "$NC_ADDR" ]; then
  ip link set "$nic" up
  ip addr add "$NC_ADDR/$NC_PREFIX" dev "$nic"
  [ -n "$NC_GW" ] && ip route add default via "$NC_GW" dev "$nic"
  say "address=$NC_ADDR/$NC_PREFIX interface=$nic${NC_GW:+ gateway=$NC_GW}"
elif [ -n "$NC_DHCP" ]; then
  ip link set "$nic" up
  say "dhcp interface=$nic"
  udhcpc -f -i "$nic" -s /etc/udhcpc/script -A 5 > /dev/null 2>&1 &
else
  say "network=unconfigured (network-config has nothing this init understands)"
fi

# The agent's port: no udev, so no /dev/virtio-ports/org.qemu.guest_agent.0 link; find the
# /dev/vportNpM whose name is the agent's.
port=''
tries=0
while [ -z "$port" ] && [ $tries -lt 100 ]; do
  for name_file in /sys/class/virtio-ports/*/name; do
    [ -f "$name_file" ] || continue
    if [ "$(cat "$name_file")" = org.qemu.guest_agent.0 ]; then
      dir="${name_file%/name}"
      [ -c "/dev/${dir##*/}" ] && port="/dev/${dir##*/}"
    fi
  done
  [ -n "$port" ] || { usleep 100000; tries=$((tries + 1)); }
done
if [ -z "$port" ]; then
  say "qemu-ga=none (no org.qemu.guest_agent.0 port)"
  while :; do sleep 3600; done
fi

mkdir -p /run/qemu-ga
say "qemu-ga port=$port"
say "ready"
# PID 1 must never exit: supervise the agent.
while :; do
  qemu-ga -m virtio-serial -p "$port" -t /run/qemu-ga -f /run/qemu-ga/qemu-ga.pid
  say "qemu-ga exited ($?), restarting"
  sleep 1
done
EOF
chmod 0755 "$initrd/init" "$initrd/sbin/shutdown" "$initrd/etc/udhcpc/script"
echo 'root:x:0:0:root:/root:/bin/sh' > "$initrd/etc/passwd"
echo 'root:x:0:' > "$initrd/etc/group"
echo 'kvm2-guest' > "$initrd/etc/hostname"

(cd "$initrd" && find . -mindepth 1 | LC_ALL=C sort | "$busybox" cpio -o -H newc -R 0:0 2> /dev/null) \
  | gzip -9n > "$scratch/initrd.img"
log "initramfs: $(($(stat -c %s "$scratch/initrd.img") / 1024)) KiB"

# --- disk ---------------------------------------------------------------------------------------
raw="$scratch/disk.raw"
truncate -s "${DISK_MIB}M" "$raw"
# GPT with one EFI system partition from 1 MiB to the end.
printf 'label: gpt\nstart=%dMiB, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="EFI system"\n' \
  "$ESP_OFFSET_MIB" | sfdisk --quiet --no-reread --no-tell-kernel "$raw" >&2
esp_sectors="$(sfdisk --json "$raw" | sed -n 's/.*"size": *\([0-9]*\).*/\1/p' | head -n1)"
[[ -n "$esp_sectors" ]] || die 'cannot read the partition size back'
esp="$raw@@${ESP_OFFSET_MIB}M"
mt mformat -i "$esp" -T "$esp_sectors" -h 1 -s 32 -v KVM2ESP ::
mt mmd -i "$esp" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries ::/kvm2
mt mcopy -i "$esp" "$sdboot" ::/EFI/BOOT/BOOTX64.EFI
mt mcopy -i "$esp" "$vmlinuz" ::/kvm2/vmlinuz
mt mcopy -i "$esp" "$scratch/initrd.img" ::/kvm2/initrd.img
printf 'timeout 0\ndefault kvm2.conf\n' > "$scratch/loader.conf"
printf 'title kvm2 test guest\nlinux /kvm2/vmlinuz\ninitrd /kvm2/initrd.img\noptions console=ttyS0 rdinit=/init\n' \
  > "$scratch/kvm2.conf"
mt mcopy -i "$esp" "$scratch/loader.conf" ::/loader/loader.conf
mt mcopy -i "$esp" "$scratch/kvm2.conf" ::/loader/entries/kvm2.conf

work="$CACHE_ROOT/.build-$key-$$"
rm -rf "$work"
mkdir -p "$work"
qemu-img convert -q -f raw -O qcow2 "$raw" "$work/guest.qcow2"
elapsed=$(($(now_ms) - started))
size="$(stat -c %s "$work/guest.qcow2")"
{
  echo '{'
  echo "  \"key\": \"$key\","
  echo "  \"builtAt\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "  \"buildMs\": $elapsed,"
  echo "  \"sizeBytes\": $size,"
  echo "  \"kernel\": \"$KERNEL_VERSION\","
  echo '  "packages": {'
  sep=''
  for pkg in "${PACKAGES[@]}"; do
    printf '%s    "%s": "%s"' "$sep" "$pkg" "${version[$pkg]}"
    sep=$',\n'
  done
  printf '\n  }\n}\n'
} > "$work/build.json"
rm -rf "$IMAGE_DIR"
mv "$work" "$IMAGE_DIR"
work=''

# Keep the newest few builds (other checkouts may use an older script).
ls -1dt "$CACHE_ROOT"/*/ 2> /dev/null | tail -n +$((KEEP_BUILDS + 1)) | while read -r old; do
  rm -rf "$old"
done

log "built $IMAGE ($((size / 1024)) KiB) in $((elapsed / 1000)).$(printf '%03d' $((elapsed % 1000))) s"
echo "$IMAGE"
