# shellcheck shell=bash
# Sourced by scripts/build-guest-image.sh: the package versions the image is made from, and
# their download into the scratch directory (apt-get download, dpkg -x: nothing is installed).

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

# Fills version[] (package → candidate version) and sets KERNEL_VERSION and PACKAGES, the
# packages to download: the kernel's image package in place of its metapackage.
resolve_packages() {
  local listing pkg ver kernel_pkg
  listing="$(candidates)"
  if [[ "$(wc -l <<< "$listing")" -lt ${#WANTED[@]} ]]; then
    log 'apt lists are missing packages: apt-get update'
    apt_quiet update >&2
    listing="$(candidates)"
  fi
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
}

# Downloads PACKAGES at the versions the key was computed from, unpacks them into $pkgroot and
# checks that the files the later stages take from them are there.
fetch_packages() {
  local pins=() pkg deb file
  log "downloading ${PACKAGES[*]}"
  for pkg in "${PACKAGES[@]}"; do pins+=("$pkg=${version[$pkg]}"); done
  (cd "$debs" && apt_quiet download "${pins[@]}" >&2)
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$pkgroot"; done
  for file in "$busybox" "$mtools" "$vmlinuz" "$sdboot" "$qemu_ga"; do
    [[ -f "$file" ]] || die "missing after unpacking: ${file#"$pkgroot"}"
  done
}
