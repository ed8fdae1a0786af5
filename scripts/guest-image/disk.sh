# shellcheck shell=bash
# Sourced by scripts/build-guest-image.sh: the disk (a GPT with one EFI system partition holding
# systemd-boot, the kernel and the initramfs, filled with mtools and never mounted), then its
# qcow2 and build.json moved into the cache in one rename.

# mtools reads no config here and skips its floppy-geometry sanity checks on image files.
export MTOOLSRC=/dev/null MTOOLS_SKIP_CHECK=1
mt() { "$mtools" -c "$@"; }

build_disk() {
  local esp_sectors esp
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
}

# The qcow2 and its build.json, built in $work beside the cache entry and renamed into it, so a
# reader never sees half an entry; then the builds beyond KEEP_BUILDS are removed.
install_image() {
  local elapsed size sep pkg old
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
}
