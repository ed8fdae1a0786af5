# shellcheck shell=bash
# Sourced by scripts/build-guest-image.sh: the files of the guest's own in the initramfs tree
# $initrd: /init (PID 1), the network-config reader it runs, udhcpc's hook, /sbin/shutdown for
# qemu-ga, and the few files of /etc. Every heredoc is quoted ('EOF'): its text reaches the
# image as written, nothing expanded by this shell.

write_guest_files() {
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
}
