// The load the concurrency tests put on a fleet's host h1, and what they read back from the
// machine: a burst of random creates and deletes over a few names, drawn from a seeded PRNG (the
// same seed gives the same plan), with every job's result waited for; a collision, a delete
// enqueued while its instance's create works; and a name's domain uid and volumes.
import { Queue } from 'bullmq';
import { expect } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import type { ResultEntry } from '../../queues/results.js';
import type { QueueFleet } from './queue-fleet.js';
import { virsh } from './virsh.js';

const KVM2_XMLNS = 'https://kvm2.dev/xmlns/instance/1';
/** waitFor calls at once (each holds a connection of its own for a blocking read). */
const WAITERS = 10;

/** mulberry32: a small, well-mixed 32-bit PRNG; the same seed gives the same plan. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Request {
  readonly index: number;
  readonly name: string;
  readonly op: 'create' | 'delete';
}

export interface Enqueued extends Request {
  readonly jobId: string;
  readonly generation: number;
  /** The create's uid (creates only). */
  readonly uid?: string;
}

export interface BurstOptions {
  readonly seed: number;
  readonly requests: number;
  readonly names: number;
  readonly timeoutMs: number;
}

export interface Burst {
  /** What was enqueued, in order. */
  readonly plan: Enqueued[];
  /** What each waitFor gave, by the plan's index. */
  readonly waits: PromiseSettledResult<ResultEntry>[];
  readonly enqueuedMs: number;
  /** From the first enqueue to the last result. */
  readonly settledMs: number;
}

/**
 * Fills the tiny image's base volume on h1 (a create and a delete of one instance): otherwise
 * the first creates of different names would meet on the image lock, and such a run (delayed,
 * no result) would have held its instance lock while the checks could not tell it from a run
 * that found its instance busy. After this, a delayed run is always one that found its
 * instance busy, holding nothing.
 */
export async function warmUp(
  kvm2: Kvm2Client,
  fleet: QueueFleet,
  timeoutMs: number,
): Promise<void> {
  const warm = await kvm2.create(
    { host: 'h1', name: fleet.name('warm'), image: fleet.image, tag: 'wc' },
    { wait: false },
  );
  expect(await kvm2.waitFor(warm.jobId, { timeoutMs })).toMatchObject({ outcome: 'succeeded' });
  const gone = await kvm2.delete(warm.id);
  expect(await kvm2.waitFor(gone.jobId, { timeoutMs })).toMatchObject({ outcome: 'succeeded' });
}

export async function runBurst(
  kvm2: Kvm2Client,
  fleet: QueueFleet,
  options: BurstOptions,
): Promise<Burst> {
  const random = prng(options.seed);
  const names = Array.from({ length: options.names }, (_, i) => fleet.name(`n${i}`));
  const requests: Request[] = Array.from({ length: options.requests }, (_, index) => ({
    index,
    name: names[Math.floor(random() * options.names)] ?? '',
    op: random() < 0.5 ? 'create' : 'delete',
  }));

  // One producer, as fast as it goes, while the workers take the jobs: each request is
  // enqueued once the one before it is, so the plan's order is each name's order.
  const plan: Enqueued[] = [];
  const started = performance.now();
  for (const r of requests) {
    if (r.op === 'create') {
      const c = await kvm2.create(
        { host: 'h1', name: r.name, image: fleet.image, tag: 'wc' },
        // The tiny image boots no guest, so no address would ever come.
        { wait: false },
      );
      plan.push({ ...r, jobId: c.jobId, generation: c.generation, uid: c.uid });
    } else {
      const d = await kvm2.delete(`h1/${r.name}`);
      plan.push({ ...r, jobId: d.jobId, generation: d.generation });
    }
  }
  const enqueuedMs = performance.now() - started;

  const waits = new Array<PromiseSettledResult<ResultEntry>>(plan.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: WAITERS }, async () => {
      for (let i = next++; i < plan.length; i = next++) {
        const jobId = plan[i]?.jobId ?? '';
        waits[i] = await kvm2.waitFor(jobId, { timeoutMs: options.timeoutMs }).then(
          (value) => ({ status: 'fulfilled', value }) as const,
          (reason: unknown) => ({ status: 'rejected', reason }) as const,
        );
      }
    }),
  );
  return { plan, waits, enqueuedMs, settledMs: performance.now() - started };
}

export interface Collision {
  readonly name: string;
  readonly createJob: string;
  readonly deleteJob: string;
}

/** A create on h1, and a delete of it enqueued once the create works inside the provider. */
export async function collide(
  kvm2: Kvm2Client,
  fleet: QueueFleet,
  hostQueue: string,
  timeoutMs: number,
): Promise<Collision> {
  const name = fleet.name('busy');
  const created = await kvm2.create(
    { host: 'h1', name, image: fleet.image, tag: 'wc' },
    { wait: false },
  );
  // Wait until the create is inside the provider (past its generation checks, holding the
  // instance lock): it reports a phase then. The delete enqueued now is the newest request,
  // so the free slot takes it at once, and it finds the instance busy.
  const queue = new Queue(hostQueue, {
    connection: fleet.scope.redis,
    prefix: fleet.scope.prefix,
  });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const progress = (await queue.getJob(created.jobId))?.progress;
      if (typeof progress === 'object' && progress !== null && 'phase' in progress) break;
      if (Date.now() > deadline) throw new Error(`create ${created.jobId} never reported a phase`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await queue.close();
  }
  const deleted = await kvm2.delete(created.id);
  return { name, createJob: created.jobId, deleteJob: deleted.jobId };
}

/** The uid in a domain's kvm2 metadata. */
export async function domainUid(name: string): Promise<string | undefined> {
  const xml = await virsh(['metadata', name, KVM2_XMLNS]);
  return /\buid="([^"]+)"/.exec(xml)?.[1];
}

/** A name's own volumes among `volumes`. */
export function ownVolumes(volumes: readonly string[], name: string): string[] {
  // kvm2-<name>.qcow2 and kvm2-<name>-seed.iso; no name here is a prefix of another plus '-'.
  return volumes.filter((v) => v.startsWith(`kvm2-${name}.`) || v.startsWith(`kvm2-${name}-`));
}
