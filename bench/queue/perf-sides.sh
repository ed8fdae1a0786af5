#!/usr/bin/env bash
# Where each side of bench/queue spends the machine's CPU, by process and thread, from perf's
# on-CPU samples of the whole machine (not the V8 profiler's, whose self times include time
# off the CPU). Each side runs alone (`--only`), once, under `perf record -a`; the table gives
# ms on CPU per 1,000 jobs for each thread name and the difference kvm2 − BullMQ same.
#   bench/queue/perf-sides.sh [--jobs N] [--rounds N] [--warmup N]   (after one `npm run bench:queue`,
#   which compiles dist-bench)
# Needs perf (Debian: linux-perf) and root or kernel.perf_event_paranoid ≤ 0 for -a. Each side's
# perf.data stays in $PERF_DIR (default /tmp/kvm2-perf) for `perf report` by symbol, with
# --perf-basic-prof's maps naming the JIT's functions.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v perf >/dev/null || { echo "perf-sides: perf is not installed (Debian: linux-perf)" >&2; exit 2; }
[[ -f dist-bench/bench/queue/main.js ]] || { echo "perf-sides: run npm run bench:queue once first (dist-bench)" >&2; exit 2; }
jobs_per_round=2000 rounds=3 warmup=6000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --jobs) jobs_per_round="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    *) echo "perf-sides: unknown argument $1" >&2; exit 2 ;;
  esac
done
jobs=$(( rounds * jobs_per_round + warmup ))
dir="${PERF_DIR:-/tmp/kvm2-perf}"
mkdir -p "$dir"
for side in kvm2 same; do
  perf record -q -o "$dir/$side.data" -F 999 -a -g -- \
    node --perf-basic-prof dist-bench/bench/queue/main.js --only "$side" --jobs "$jobs_per_round" \
    --rounds "$rounds" \
    --warmup "$warmup" > "$dir/$side.out" 2>&1
  # Samples at 999 Hz: one is ~1 ms on a core. Thread names as the kernel has them.
  perf report -i "$dir/$side.data" --stdio --no-children --sort comm -g none -n 2>/dev/null |
    awk -v side="$side" '$1 ~ /%$/ { n = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); print side "\t" $0 "\t" n }'
done | awk -F'\t' '{ ms[$2, $1] = $3; names[$2] = 1 }
  END {
    for (n in names) {
      k = ms[n, "kvm2"] * 1000 / jobs; s = ms[n, "same"] * 1000 / jobs
      if (k + s >= 2) printf "%-18s %12.1f %12.1f %+14.1f\n", (n == "swapper" ? "(idle)" : n), k, s, k - s
    }
  }' jobs="$jobs" | sort -k4 -g -r | {
  printf '%-18s %12s %12s %14s\n' thread kvm2 'BullMQ same' 'kvm2 - same'
  cat
  echo "(ms on CPU per 1,000 jobs, i.e. µs a job; $jobs jobs a side, each round's setup included)"
}
