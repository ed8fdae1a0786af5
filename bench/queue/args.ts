// bench/queue's command line: `--jobs N --rounds N --warmup N --concurrency N --only SIDE
// --stub-provider` (main.ts's header says what each one sets).

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
export const JOBS = arg('jobs', 2000);
export const ROUNDS = arg('rounds', 5);
/**
 * Jobs of an untimed round per side before the timed ones: every side's code paths compiled.
 * With one round's worth, kvm2's first timed round still ran 10–20% below its later ones.
 */
export const WARMUP = arg('warmup', 3 * JOBS);
export const CONCURRENCY = arg('concurrency', 16);
const onlyAt = process.argv.indexOf('--only');
/** One side alone (for profiling): kvm2, same or empty. */
export const ONLY = onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined;
/**
 * Provider.delete returns at once on every side: the queue path alone (kvm2's scripts, its
 * run's JS, BullMQ's), measured without libvirt's share. For analysis: no target is read.
 */
export const STUB_PROVIDER = process.argv.includes('--stub-provider');
