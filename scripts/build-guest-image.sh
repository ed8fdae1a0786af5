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
#   key = sha256 of this script, its stages in scripts/guest-image/ and the versions of every
#   package the image is made from, so a second run is instant and any change to either makes a
#   new image. --force rebuilds anyway.
#
# Packages are fetched with `apt-get download` and unpacked with `dpkg -x` into a scratch
# directory: nothing is installed on the host. Host tools: apt-get, dpkg, sfdisk (fdisk),
# qemu-img (qemu-utils), ldd (libc-bin), gzip, flock, sha256sum. The initramfs's cpio and
# modules.dep are made by the downloaded static busybox; mformat/mmd/mcopy come from the
# downloaded mtools package.
#
# This file resolves the versions, keys and locks the cache, and runs the stages, which it
# sources from scripts/guest-image/: packages.sh (versions, download), initramfs.sh (busybox,
# modules, qemu-ga, the cpio), guest-files.sh (/init and its helpers), disk.sh (the ESP, the
# qcow2 and its cache entry).
set -euo pipefail

readonly SCRIPT_PATH="$(readlink -f "${BASH_SOURCE[0]}")"
readonly STAGE_DIR="$(dirname "$SCRIPT_PATH")/guest-image"
readonly STAGES=(packages.sh initramfs.sh guest-files.sh disk.sh)
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

for stage in "${STAGES[@]}"; do
  # shellcheck source=/dev/null
  source "$STAGE_DIR/$stage"
done

for tool in apt-get apt-cache dpkg dpkg-query sfdisk qemu-img ldd gzip flock sha256sum; do
  command -v "$tool" > /dev/null || die "$tool is missing (Debian packages: apt, dpkg, fdisk, qemu-utils, libc-bin, gzip, util-linux, coreutils)"
done

# Package → the version apt would download: resolve_packages fills it, the key and build.json
# read it.
declare -A version=()
resolve_packages

# The key: this script and its stages, the downloaded packages' versions, and the host's
# versions of the packages qemu-ga's libraries are copied from.
key="$(
  {
    sha256sum < "$SCRIPT_PATH"
    for stage in "${STAGES[@]}"; do sha256sum < "$STAGE_DIR/$stage"; done
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
raw="$scratch/disk.raw"    # the disk, before its conversion to qcow2
mkdir -p "$debs" "$pkgroot" "$initrd"
# What the stages take from the unpacked packages (fetch_packages checks they are there).
busybox="$pkgroot/bin/busybox"
mtools="$pkgroot/usr/bin/mtools"
vmlinuz="$pkgroot/boot/vmlinuz-$KERNEL_VERSION"
sdboot="$pkgroot/usr/lib/systemd/boot/efi/systemd-bootx64.efi"
qemu_ga="$pkgroot/usr/sbin/qemu-ga"

fetch_packages
initramfs_tree
initramfs_modules
initramfs_agent
write_guest_files
pack_initramfs
build_disk
install_image
echo "$IMAGE"
