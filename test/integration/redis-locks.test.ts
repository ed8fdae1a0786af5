// Redis keyed locks (SPEC §8) against the harness's real redis-server. Every key lives under a
// random prefix of this run and is deleted after each test. Two RedisLocks on two connections
// stand for two worker processes; a third connection, disconnected mid-lease, for a dead one.
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CallAbortedError } from '../../src/libvirt/errors.js';
import { encodePrefix, FrameDecoder } from '../../src/libvirt/packet.js';
import { ConnectGetHostname, REMOTE_PROGRAM } from '../../src/libvirt/protocol.gen.js';
import { RpcClient } from '../../src/libvirt/rpc-client.js';
import { LockLostError, RedisLocks, type Lease } from '../../workers/locks/redis-locks.js';
import { duplexPair } from '../fakes/duplex-pair.js';

/** ConnectGetHostname's reply: an XDR string. */
function hostnameReply(name: string): Buffer {
  const b = Buffer.alloc(4 + Math.ceil(name.length / 4) * 4);
  b.writeUInt32BE(name.length, 0);
  b.write(name, 4);
  return b;
}

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `kvm2test:${randomBytes(6).toString('hex')}`;
const POLL = { pollMinMs: 5, pollMaxMs: 40 };

let clientA: Redis;
let clientB: Redis;
let locksA: RedisLocks;
let locksB: RedisLocks;

beforeAll(() => {
  clientA = new Redis(REDIS_URL);
  clientB = new Redis(REDIS_URL);
  locksA = new RedisLocks({ client: clientA, prefix, ttlMs: 1_000, ...POLL });
  locksB = new RedisLocks({ client: clientB, prefix, ttlMs: 1_000, ...POLL });
});

async function keysOfRun(): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await clientA.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found;
}

afterEach(async () => {
  const keys = await keysOfRun();
  if (keys.length > 0) await clientA.del(...keys);
});

afterAll(async () => {
  await Promise.all([clientA.quit(), clientB.quit()]);
});

interface Span {
  readonly who: string;
  readonly enter: number;
  readonly exit: number;
}

function overlaps(a: Span, b: Span): boolean {
  return a.enter < b.exit && b.enter < a.exit;
}

/** performance.now() when `lease` is lost. */
function lossTime(lease: Lease): Promise<number> {
  return new Promise((resolve) => {
    lease.signal.addEventListener('abort', () => resolve(performance.now()), { once: true });
  });
}

function lostError(err: unknown): LockLostError {
  expect(err).toBeInstanceOf(LockLostError);
  return err as LockLostError;
}

describe('RedisLocks', () => {
  it('never runs two holders of one key at once, across connections', async () => {
    const spans: Span[] = [];
    const run = (locks: RedisLocks, who: string): Promise<void> =>
      locks.withLock('i-same', async () => {
        const enter = performance.now();
        await delay(30);
        spans.push({ who, enter, exit: performance.now() });
      });
    await Promise.all([0, 1, 2, 3].flatMap((i) => [run(locksA, `a${i}`), run(locksB, `b${i}`)]));

    expect(spans).toHaveLength(8);
    for (const [i, a] of spans.entries()) {
      for (const b of spans.slice(i + 1)) expect(overlaps(a, b), `${a.who}/${b.who}`).toBe(false);
    }
    expect(await keysOfRun()).toEqual([]);
  });

  it("makes tokens no other holder makes: each instance's own prefix, then a counter", () => {
    const again = new RedisLocks({ client: clientA, prefix, ttlMs: 1_000, ...POLL });
    const tokens = [locksA, locksB, again].flatMap((locks) =>
      Array.from({ length: 1_000 }, () => locks.newToken()),
    );
    expect(new Set(tokens).size).toBe(tokens.length);
    // 128 random bits before the counter: two processes never share a prefix.
    const prefixes = new Set(tokens.map((t) => t.split('.')[0]));
    expect(prefixes.size).toBe(3);
    for (const p of prefixes) expect(p).toMatch(/^[0-9a-f]{32}$/);
  });

  it('runs holders of different keys concurrently', async () => {
    const spans: Span[] = [];
    const run = (locks: RedisLocks, key: string): Promise<void> =>
      locks.withLock(key, async () => {
        const enter = performance.now();
        await delay(150);
        spans.push({ who: key, enter, exit: performance.now() });
      });
    await Promise.all([run(locksA, 'i-x'), run(locksB, 'i-y')]);

    const [x, y] = spans;
    expect(x !== undefined && y !== undefined && overlaps(x, y)).toBe(true);
  });

  it('tryAcquire answers null at once while the key is held, a lease once released', async () => {
    const held = await locksA.tryAcquire('i-try', { ttlMs: 60 });
    expect(held).not.toBeNull();
    expect(await clientB.exists(locksA.lockKey('i-try'))).toBe(1);

    // A null at all says it did not wait (the holder renews: waiting would never end); the
    // bound only says no poll loop ran first, with room for a loaded machine.
    const started = performance.now();
    expect(await locksB.tryAcquire('i-try')).toBeNull();
    expect(performance.now() - started).toBeLessThan(1_000);

    expect(await held?.release()).toBe(true);
    expect(await held?.release()).toBe(true); // idempotent: the first call's answer
    const next = await locksB.tryAcquire('i-try');
    expect(next).not.toBeNull();
    expect(await next?.release()).toBe(true);

    // Released means no timer is left: well past the 60 ms TTL, no loss is reported.
    await delay(150);
    expect(held?.signal.aborted).toBe(false);
    expect(await keysOfRun()).toEqual([]);
  });

  it('renews the lock while fn runs longer than the TTL', async () => {
    // TTL 1 s, renewed every ~333 ms, for 2.5 s: a loaded machine (a CI run once stalled this
    // process past a 300 ms TTL) still renews in time.
    const shortA = new RedisLocks({ client: clientA, prefix, ttlMs: 1_000, ...POLL });
    const key = shortA.lockKey('i-long');
    const ttls: number[] = [];
    let intruders = 0;
    let fnSignal: AbortSignal | undefined;

    await shortA.withLock('i-long', async (signal) => {
      fnSignal = signal;
      const until = performance.now() + 2_500;
      while (performance.now() < until) {
        ttls.push(await clientB.pttl(key));
        const lease = await locksB.tryAcquire('i-long');
        if (lease !== null) {
          intruders++;
          await lease.release();
        }
        await delay(40);
      }
    });

    expect(ttls.length).toBeGreaterThan(15);
    expect(ttls.every((ms) => ms > 0)).toBe(true);
    expect(intruders).toBe(0);
    expect(fnSignal?.aborted).toBe(false);
    expect(await clientB.exists(key)).toBe(0);
  });

  // TTL 1.5 s, renewed every 500 ms: a loss noticed in under the TTL was noticed by a renewal,
  // not by the lease running out, with a second to spare for a loaded machine.
  it('fires the signal with ERR_LOCK_LOST at the next renewal when the key is deleted', async () => {
    const shortA = new RedisLocks({ client: clientA, prefix, ttlMs: 1_500, ...POLL });
    let lostAfter = Number.NaN;

    const outcome = shortA.withLock('i-del', async (signal) => {
      await clientB.del(shortA.lockKey('i-del'));
      const deletedAt = performance.now();
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      lostAfter = performance.now() - deletedAt;
      throw signal.reason;
    });

    const err = lostError(await outcome.catch((e: unknown) => e));
    expect(err.code).toBe('ERR_LOCK_LOST');
    expect(err.kind).toBe('transient');
    expect(err.reason).toBe('expired');
    expect(err.message).toContain('i-del');
    expect(lostAfter).toBeLessThan(1_500);
  });

  it('fires on a key taken over behind its back, and release spares the new owner', async () => {
    const lease = await locksA.tryAcquire('i-steal', { ttlMs: 1_500 });
    if (lease === null) throw new Error('expected the lock');
    const key = locksA.lockKey('i-steal');
    await clientB.set(key, 'new-owner-token', 'PX', 5_000);
    const takenAt = performance.now();

    const reason = await new Promise<unknown>((resolve) =>
      lease.signal.addEventListener('abort', () => resolve(lease.signal.reason)),
    );
    expect(performance.now() - takenAt).toBeLessThan(1_500); // a renewal saw it, as above
    const err = lostError(reason);
    expect(err.code).toBe('ERR_LOCK_LOST');
    expect(err.reason).toBe('taken');

    expect(await lease.release()).toBe(false);
    expect(await clientB.get(key)).toBe('new-owner-token');
  });

  it('frees the key one TTL after its holder dies', async () => {
    const doomed = new Redis(REDIS_URL);
    const deadLocks = new RedisLocks({ client: doomed, prefix, ttlMs: 1_500 });
    const lease = await deadLocks.tryAcquire('i-dead');
    if (lease === null) throw new Error('expected the lock');
    await delay(600); // at least one renewal (every 500 ms) went through
    doomed.disconnect();
    const diedAt = performance.now();

    expect(await locksB.tryAcquire('i-dead')).toBeNull();
    const taken = await locksB.acquire('i-dead', { signal: AbortSignal.timeout(10_000) });
    const freedAfter = performance.now() - diedAt;
    // The last renewal left 1 to 1.5 s on the key: not free at once, free about a TTL later.
    expect(freedAfter).toBeGreaterThan(500);
    expect(freedAfter).toBeLessThan(1_500 + 2_000);

    // The dead holder's side learns it too, once the TTL it last set has run out.
    expect(lostError(lease.signal.reason).reason).toBe('unrenewed');
    expect(await lease.release()).toBe(false);
    expect(await taken.release()).toBe(true);
  });

  it('learns its loss at the TTL when its holder dies before the first renewal', async () => {
    const doomed = new Redis(REDIS_URL);
    const deadLocks = new RedisLocks({ client: doomed, prefix, ttlMs: 900 });
    const sentAt = performance.now();
    const lease = await deadLocks.tryAcquire('i-early');
    if (lease === null) throw new Error('expected the lock');
    doomed.disconnect(); // before the renewal due at 300 ms
    const lostAt = await lossTime(lease);
    expect(lostError(lease.signal.reason).reason).toBe('unrenewed');
    // Not before the TTL counted from the SET's sending (a timer rounds to whole ms); and not
    // long after it.
    expect(lostAt - sentAt).toBeGreaterThanOrEqual(900 - 2);
    expect(lostAt - sentAt).toBeLessThan(900 + 1_500);
  });

  it('an adopted lease whose TTL is nearly spent is lost when it runs out, renewal or not', async () => {
    const stalled = new Redis(REDIS_URL);
    await stalled.set(`${prefix}:lock:i-late`, 'late-token', 'PX', 3_000);
    const lateLocks = new RedisLocks({ client: stalled, prefix, ttlMs: 3_000 });
    // The script that took it was sent 2.8 s ago: 200 ms left, less than ttl/3 (1 s) away.
    const sentAt = performance.now() - 2_800;
    stalled.disconnect(); // no renewal can confirm it
    const lease = lateLocks.adopt('i-late', 'late-token', sentAt);
    const lostAt = await lossTime(lease);
    expect(lostError(lease.signal.reason).reason).toBe('unrenewed');
    expect(lostAt - sentAt).toBeGreaterThanOrEqual(3_000 - 2);
    // Well before the first renewal would have been due (1 s after adoption).
    expect(lostAt - sentAt).toBeLessThan(2_800 + 700);
  });

  it('a waiter whose signal aborts rejects promptly with its reason and takes nothing', async () => {
    const holder = await locksA.tryAcquire('i-wait');
    if (holder === null) throw new Error('expected the lock');
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    let entered = false;

    const waiting = locksB.withLock(
      'i-wait',
      () => {
        entered = true;
        return Promise.resolve();
      },
      { signal: controller.signal },
    );
    await delay(100);
    const abortedAt = performance.now();
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    // The holder never lets go here: a rejection at all is the abort's; the bound says promptly.
    expect(performance.now() - abortedAt).toBeLessThan(1_000);
    expect(entered).toBe(false);

    await holder.release();
    expect(await keysOfRun()).toEqual([]);
    await expect(
      locksB.withLock('i-wait', () => Promise.resolve(), { signal: controller.signal }),
    ).rejects.toBe(reason);
    expect(await keysOfRun()).toEqual([]);
  });

  it("passes the caller's abort to fn and still releases the key", async () => {
    const controller = new AbortController();
    const reason = new Error('job cancelled');
    const outcome = locksA.withLock(
      'i-cancel',
      async (signal) => {
        controller.abort(reason);
        await Promise.resolve();
        throw signal.reason;
      },
      { signal: controller.signal },
    );
    await expect(outcome).rejects.toBe(reason);
    expect(await keysOfRun()).toEqual([]);
  });
});

describe('a process frozen past its TTL (SIGSTOP, a paused VM, swapping)', () => {
  it('sends no libvirt call once it resumes: the lost lease is known before the next call', async () => {
    // A fake daemon on an in-memory pair: the reply to the first call arrives during the
    // freeze, and the code resuming on it makes the next call at once. After a freeze Node
    // delivers what came in before it runs the overdue timers that tell the lease is lost.
    const [ours, theirs] = duplexPair();
    const calls: number[] = [];
    const decoder = new FrameDecoder((h) => {
      if (h.type === 0 && h.prog === REMOTE_PROGRAM) calls.push(h.serial);
    });
    const reply = (serial: number, payload: Buffer): void => {
      theirs.write(
        Buffer.concat([
          encodePrefix(
            {
              prog: REMOTE_PROGRAM,
              vers: 1,
              proc: ConnectGetHostname.proc,
              type: 1,
              serial,
              status: 0,
            },
            payload.length,
          ),
          payload,
        ]),
      );
    };
    theirs.on('data', (d: Buffer) => decoder.push(d));
    const client = new RpcClient(ours, { host: 'frozen' });
    const lease = await locksA.acquire('i-frozen');
    try {
      const warm = client.call(ConnectGetHostname, undefined, { signal: lease.signal });
      await new Promise((r) => setTimeout(r, 20));
      reply(calls[0] ?? 0, hostnameReply('hv1'));
      await warm;
      const first = client.call(ConnectGetHostname, undefined, { signal: lease.signal });
      const second = first.then(() =>
        client.call(ConnectGetHostname, undefined, { signal: lease.signal }),
      );
      second.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
      expect(calls).toHaveLength(1 + 1);
      reply(calls[1] ?? 0, hostnameReply('hv1'));
      // Frozen for longer than the TTL (1 s): no timer runs, and the key lapses in Redis.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_600);
      const err = await second.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CallAbortedError);
      expect((err as CallAbortedError).cause).toBeInstanceOf(LockLostError);
      expect(calls, 'a call was sent after the lease was lost').toHaveLength(2);
    } finally {
      client.destroy();
      await lease.release();
    }
  });
});
