// A host's event stream across a lost link (src/libvirt/event-stream.ts): libvirtd restarted
// under it, the stream dials again, subscribes again and says so, and the next change is heard
// on the new connection. Real libvirtd through the harness's sshd.
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { LifecycleEvent } from '../../src/libvirt/domain-events.js';
import { DomainEventStream } from '../../src/libvirt/event-stream.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { defineEventDomain, Heard, removeEventDomain } from '../harness/domain-events.js';
import { restartLibvirtd } from '../harness/libvirtd.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';

let sshd: Sshd;
const name = uniqueName('kvm2-evstream');

beforeAll(async () => {
  sshd = await startSshd();
  await defineEventDomain(name, sshd.dir);
});

afterAll(async () => {
  await removeEventDomain(name);
  await sshd?.stop();
});

/** Resolves once virsh says the domain runs, polling; fails after `ms`. */
async function runningAgain(domain: string, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    const state = (await virsh(['domstate', domain]).catch(() => '')).trim();
    if (state === 'running') return;
    if (performance.now() > deadline) throw new Error(`${domain} is ${state || '?'}, not running`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Resolves when `count()` reaches `n`, polling; fails after `ms`. */
async function reaches(count: () => number, n: number, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (count() < n) {
    if (performance.now() > deadline) throw new Error(`count ${count()} never reached ${n}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('DomainEventStream', () => {
  it('subscribes again after libvirtd restarts, says so, and hears the next change', async () => {
    const heard = new Heard(name);
    const connects: number[] = [];
    const errors: unknown[] = [];
    const stream = new DomainEventStream({
      dial: (signal) =>
        LibvirtConnection.connect(parseLibvirtUri(sshd.uri('/system')), {
          host: 'evstream',
          signal,
        }),
      onLifecycle: heard.handler,
      onConnected: (_conn, reconnects) => void connects.push(reconnects),
      onError: (err) => void errors.push(err),
      retryMinMs: 200,
    });
    stream.start();
    try {
      await reaches(() => connects.length, 1, 10_000);
      await virsh(['start', name]);
      await heard.next(LifecycleEvent.STARTED, 0);

      // The domain keeps running while libvirtd restarts; the link under the stream does not.
      await restartLibvirtd();
      await reaches(() => connects.length, 2, 20_000);
      expect(connects).toEqual([0, 1]);
      // The new daemon takes its running domains back in threads of their own after it
      // answers; a destroy sent before it has this one back is refused as "not running".
      await runningAgain(name, 20_000);
      const before = heard.events.length;
      await virsh(['destroy', name]);
      const stopped = await heard.next(LifecycleEvent.STOPPED, before);
      expect(stopped.dom.name).toBe(name);
    } finally {
      await stream.close();
    }
    // Closed: no dial after it, and what it heard stays as it was.
    const count = heard.events.length;
    await virsh(['start', name]);
    await virsh(['destroy', name]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(heard.events).toHaveLength(count);
    expect(connects).toHaveLength(2);
  }, 90_000);

  it('keeps dialling after failed dials, pausing longer each time, and reports each failure', async () => {
    const heard = new Heard(name);
    const errors: unknown[] = [];
    const dialledAt: number[] = [];
    let connected = 0;
    const stream = new DomainEventStream({
      dial: (signal) => {
        dialledAt.push(performance.now());
        // The host is away for the first three dials (a reboot, say).
        if (dialledAt.length <= 3) return Promise.reject(new Error('host away'));
        return LibvirtConnection.connect(parseLibvirtUri('qemu:///system'), {
          host: 'evstream-local',
          signal,
        });
      },
      onLifecycle: heard.handler,
      onConnected: () => void (connected += 1),
      onError: (err) => void errors.push(err),
      retryMinMs: 100,
    });
    stream.start();
    try {
      await reaches(() => connected, 1, 10_000);
      expect(errors.map((e) => (e as Error).message)).toEqual([
        'host away',
        'host away',
        'host away',
      ]);
      const gaps = dialledAt.slice(1).map((t, i) => t - (dialledAt[i] ?? t));
      // 100, 200, 400 ms: each pause at least the one before (timers fire late, never early).
      expect(gaps[0]).toBeGreaterThanOrEqual(95);
      expect(gaps[1]).toBeGreaterThanOrEqual(195);
      expect(gaps[2]).toBeGreaterThanOrEqual(395);
      await virsh(['start', name]);
      await heard.next(LifecycleEvent.STARTED, 0);
    } finally {
      await stream.close();
      await virsh(['destroy', name]).catch(() => undefined);
    }
  }, 60_000);

  it('pauses before dialling again when each link is lost as soon as it is up', async () => {
    // A daemon (or a middlebox) that ends each session right after the subscriptions, or an
    // event that kills the link: each loss was at once another dial, subscription and resync.
    const dialledAt: number[] = [];
    const stream = new DomainEventStream({
      dial: async (signal) => {
        dialledAt.push(performance.now());
        return LibvirtConnection.connect(parseLibvirtUri('qemu:///system'), {
          host: 'evstream-cut',
          signal,
        });
      },
      onLifecycle: () => undefined,
      onConnected: (conn) => void conn.close(),
      retryMinMs: 100,
      retryMaxMs: 10_000,
    });
    stream.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    } finally {
      await stream.close();
    }
    // 100, 200, 400, 800 ms between dials: five at most in 2 s (hundreds before).
    expect(dialledAt.length).toBeGreaterThanOrEqual(2);
    expect(dialledAt.length).toBeLessThanOrEqual(5);
    const gaps = dialledAt.slice(1).map((t, i) => t - (dialledAt[i] ?? t));
    expect(gaps[0]).toBeGreaterThanOrEqual(95);
    expect(gaps[1] ?? 200).toBeGreaterThanOrEqual(195);
  }, 30_000);

  it('lets go of its stop signal after each pause, however many dials fail', async () => {
    let stop: AbortSignal | undefined;
    let dials = 0;
    const stream = new DomainEventStream({
      dial: (signal) => {
        stop = signal;
        dials += 1;
        return Promise.reject(new Error('host away'));
      },
      onLifecycle: () => undefined,
      retryMinMs: 1,
      retryMaxMs: 1,
    });
    stream.start();
    try {
      await reaches(() => dials, 50, 10_000);
      expect(getEventListeners(stop!, 'abort').length).toBeLessThanOrEqual(1);
    } finally {
      await stream.close();
    }
  });
});
