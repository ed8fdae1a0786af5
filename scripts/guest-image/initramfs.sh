# shellcheck shell=bash
# Sourced by scripts/build-guest-image.sh: the initramfs tree in $initrd (busybox and its
# applets, the kernel modules, qemu-ga and its libraries) and its cpio archive. The files of the
# guest's own (/init and its helpers) are guest-files.sh's.

initramfs_tree() {
  local applet
  mkdir -p "$initrd"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,mnt/seed,etc/kvm2,var,root}
  ln -s ../run "$initrd/var/run"
  cp "$busybox" "$initrd/bin/busybox"
  # One symlink per applet, at the path busybox itself lists (bin/sh, sbin/ip, usr/bin/awk, ...).
  while read -r applet; do
    [[ "$applet" == bin/busybox || -e "$initrd/$applet" ]] && continue
    mkdir -p "$initrd/$(dirname "$applet")"
    ln -s /bin/busybox "$initrd/$applet"
  done < <("$busybox" --list-full)
}

# Modules: resolve GUEST_MODULES through modules.dep (written by busybox's depmod) into a load
# order where every module follows its dependencies; copy just those.
initramfs_modules() {
  local moddir line path name module
  local -a load_order=()
  local -A mod_path=() mod_deps=() mod_seen=()
  moddir="$pkgroot/lib/modules/$KERNEL_VERSION"
  [[ -d "$moddir" ]] || die "no modules for $KERNEL_VERSION"
  "$busybox" depmod -b "$pkgroot" "$KERNEL_VERSION"
  while IFS= read -r line; do
    path="${line%%:*}"
    name="$(basename "$path" .ko)"
    mod_path[$name]="$path"
    mod_deps[$name]="${line#*:}"
  done < "$moddir/modules.dep"
  # Sees the caller's mod_* and load_order (bash scopes dynamically).
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
}

# qemu-ga and the libraries ldd names. They come from the host (Debian 12, as the guest's
# packages); a library the host lacks comes from its downloaded package instead.
initramfs_agent() {
  local libpath ldd_out deb lib
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
}

# The tree as a gzipped cpio (newc, owned by root, in a fixed order) at $scratch/initrd.img.
pack_initramfs() {
  (cd "$initrd" && find . -mindepth 1 | LC_ALL=C sort | "$busybox" cpio -o -H newc -R 0:0 2> /dev/null) \
    | gzip -9n > "$scratch/initrd.img"
  log "initramfs: $(($(stat -c %s "$scratch/initrd.img") / 1024)) KiB"
}
