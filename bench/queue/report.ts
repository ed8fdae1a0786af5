// What bench/queue prints: a round per line as it ends, then the medians, the latencies, the
// context of the empty processor, the CPU per job and the ratio against the target.
import os from 'node:os';
import { median } from '../lib/virsh-ssh.js';
import { JOBS } from './args.js';
import type { Round } from './round.js';

/** #20: throughput against bare BullMQ doing the same, and Redis commands per job. */
const TARGET = 0.9;
const COMMANDS_TARGET = 4;

export const SIDES = [
  { key: 'empty', label: 'BullMQ empty' },
  { key: 'same', label: 'BullMQ same' },
  { key: 'kvm2', label: 'kvm2' },
] as const;
export type SideKey = (typeof SIDES)[number]['key'];

export function show(label: string, r: Round): string {
  const cpu = Object.entries(r.cpuUs)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(', ');
  return (
    `${label.padEnd(13)} ${r.throughput.toFixed(0).padStart(5)} jobs/s   ` +
    `p50 ${r.p50.toFixed(0).padStart(5)} ms   p99 ${r.p99.toFixed(0).padStart(5)} ms   ` +
    `wall ${r.wallMs.toFixed(0).padStart(5)} ms\n${''.padStart(23)}` +
    `per job: cpu µs ${cpu}; redis commands sent ${r.sentPerJob.toFixed(2)}` +
    `${r.idlePerJob > 0 ? ` (+${r.idlePerJob.toFixed(2)} idle polls)` : ''}; ` +
    `writes ${r.writesPerJob.toFixed(1)}; machine idle ${(r.idleShare * 100).toFixed(0)}%, ` +
    `event loop busy ${(r.elu * 100).toFixed(0)}%`
  );
}

function medianRound(rounds: readonly Round[]): Round {
  const m = (f: (r: Round) => number): number => median(rounds.map(f));
  return {
    throughput: m((r) => r.throughput),
    p50: m((r) => r.p50),
    p99: m((r) => r.p99),
    wallMs: m((r) => r.wallMs),
    cpuUs: Object.fromEntries(
      Object.keys(rounds[0]?.cpuUs ?? {}).map((k) => [k, m((r) => r.cpuUs[k] ?? NaN)]),
    ),
    sentPerJob: m((r) => r.sentPerJob),
    idlePerJob: m((r) => r.idlePerJob),
    writesPerJob: m((r) => r.writesPerJob),
    idleShare: m((r) => r.idleShare),
    elu: m((r) => r.elu),
  };
}

export function load(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

/**
 * The summary of every side's timed rounds, against the targets; `stubbed` (--stub-provider:
 * not the target's work, no libvirt calls) the same figures without a verdict.
 */
export function printSummary(
  results: Readonly<Record<SideKey, readonly Round[]>>,
  { stubbed }: { readonly stubbed: boolean },
): void {
  const verdict = (met: boolean): string =>
    stubbed ? 'not read: --stub-provider' : met ? 'met' : 'MISSED';
  const e = medianRound(results.empty);
  const b = medianRound(results.same);
  const k = medianRound(results.kvm2);
  const perRound = results.kvm2.map((r, i) => r.throughput / (results.same[i]?.throughput ?? NaN));
  console.log(`\n== summary (medians; load ${load()})`);
  console.log(show('BullMQ empty', e));
  console.log(show('BullMQ same', b));
  console.log(show('kvm2', k));
  console.log(
    `latency (burst of ${JOBS}, enqueue → finished): kvm2 p50 ${k.p50.toFixed(0)} ms, ` +
      `p99 ${k.p99.toFixed(0)} ms; BullMQ same p50 ${b.p50.toFixed(0)} ms, p99 ` +
      `${b.p99.toFixed(0)} ms; BullMQ empty p50 ${e.p50.toFixed(0)} ms, p99 ${e.p99.toFixed(0)} ms`,
  );
  if (!stubbed) {
    console.log(
      `context: the no-op's four test-driver lookups over SSH cost bare BullMQ itself ` +
        `${b.throughput.toFixed(0)} vs ${e.throughput.toFixed(0)} jobs/s = ` +
        `${(b.throughput / e.throughput).toFixed(2)}× of an empty processor; kvm2 = ` +
        `${(k.throughput / e.throughput).toFixed(2)}× of it`,
    );
  }
  // The cores are saturated on both sides, so throughput follows the CPU a job costs all the
  // processes on its path: a second reading of the ratio, less moved by a noisy neighbour.
  const total = (r: Round): number => Object.values(r.cpuUs).reduce((x, y) => x + y, 0);
  console.log(
    `cpu per job, every process on the path: kvm2 ${total(k).toFixed(0)} µs vs BullMQ same ` +
      `${total(b).toFixed(0)} µs: same ÷ kvm2 = ${(total(b) / total(k)).toFixed(2)}`,
  );
  const ratio = k.throughput / b.throughput;
  console.log(
    `queue: kvm2 ${k.throughput.toFixed(0)} jobs/s vs bare BullMQ doing the same no-op ` +
      `${b.throughput.toFixed(0)} jobs/s = ${ratio.toFixed(2)}× (per round: ` +
      `${perRound.map((x) => x.toFixed(2)).join(', ')}; target ≥ ${TARGET}: ` +
      `${verdict(ratio >= TARGET)})`,
  );
  // Judged at the issue's precision (one decimal, as its table gives 6.1 and 2.0): BullMQ's own
  // worker adds some 20 commands to a burst on either side (a fetch per slot as it fills its
  // concurrency, a blocking wait when it drains), 0.01 per job of 2,000.
  const commands = Math.round(k.sentPerJob * 10) / 10;
  console.log(
    `redis commands per job: kvm2 ${k.sentPerJob.toFixed(2)} vs BullMQ same ` +
      `${b.sentPerJob.toFixed(2)}; kvm2's gc and health queues, standing empty, polled ` +
      `${k.idlePerJob.toFixed(3)} per job besides (target ≤ ${COMMANDS_TARGET}, at one decimal: ` +
      `${verdict(commands <= COMMANDS_TARGET)})`,
  );
}
