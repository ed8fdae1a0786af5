// Domain events from the real libvirtd through the harness's sshd: a domain started, suspended,
// resumed and destroyed with virsh from outside, each change heard as a lifecycle event within
// 2 s; two subscriptions on one connection each hear them, even when the first throws; a closed
// one hears nothing more.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import {
  LifecycleEvent,
  subscribeAgentLifecycle,
  subscribeLifecycle,
  type DomainEventSubscription,
} from '../../src/libvirt/domain-events.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { defineEventDomain, Heard, removeEventDomain } from '../harness/domain-events.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';

/** virDomainEventStoppedDetailType DESTROYED, virDomainEventStartedDetailType BOOTED. */
const STOPPED_DESTROYED = 1;
const STARTED_BOOTED = 0;

let sshd: Sshd;
let conn: LibvirtConnection;
const name = uniqueName('kvm2-events');
/** What the connection logged, warnings and above. */
const logLines: string[] = [];

beforeAll(async () => {
  sshd = await startSshd();
  conn = await LibvirtConnection.connect(parseLibvirtUri(sshd.uri('/system')), {
    host: 'events',
    logger: pino({ level: 'warn' }, { write: (line: string) => void logLines.push(line) }),
  });
  await defineEventDomain(name, sshd.dir);
});

afterAll(async () => {
  await removeEventDomain(name);
  await conn?.close();
  await sshd?.stop();
});

describe('lifecycle events', () => {
  it('hears virsh start, suspend, resume and destroy from outside, each within 2 s', async () => {
    const first = new Heard(name);
    const second = new Heard(name);
    const subs: DomainEventSubscription[] = [
      await subscribeLifecycle(conn, first.handler),
      await subscribeLifecycle(conn, second.handler),
    ];
    // One registration with the daemon per connection and kind, shared.
    expect(subs[0]?.callbackId).toBe(subs[1]?.callbackId);
    try {
      const steps: [string[], number][] = [
        [['start', name], LifecycleEvent.STARTED],
        [['suspend', name], LifecycleEvent.SUSPENDED],
        [['resume', name], LifecycleEvent.RESUMED],
        [['destroy', name], LifecycleEvent.STOPPED],
      ];
      for (const [command, event] of steps) {
        const before = first.events.length;
        const beforeSecond = second.events.length;
        await virsh(command);
        const heard = await first.next(event, before);
        expect(heard.dom.name).toBe(name);
        if (event === LifecycleEvent.STOPPED) expect(heard.detail).toBe(STOPPED_DESTROYED);
        if (event === LifecycleEvent.STARTED) expect(heard.detail).toBe(STARTED_BOOTED);
        await second.next(event, beforeSecond);
      }
    } finally {
      for (const sub of subs) await sub.close();
    }
  }, 60_000);

  it('hears nothing once closed, and the connection still answers calls', async () => {
    const heard = new Heard(name);
    const sub = await subscribeLifecycle(conn, heard.handler);
    await sub.close();
    await sub.close(); // idempotent
    // A subscription still open on the same connection shows the events were sent.
    const witness = new Heard(name);
    const open = await subscribeLifecycle(conn, witness.handler);
    try {
      await virsh(['start', name]);
      await witness.next(LifecycleEvent.STARTED, 0);
      await virsh(['destroy', name]);
      await witness.next(LifecycleEvent.STOPPED, 0);
      expect(heard.events).toEqual([]);
    } finally {
      await open.close();
    }
  }, 60_000);

  it('a subscriber that throws is logged, and the next one on the connection still hears each event', async () => {
    let thrown = 0;
    const throwing = await subscribeLifecycle(conn, (e) => {
      if (e.dom.name !== name) return;
      thrown += 1;
      throw new Error('subscriber bug');
    });
    const heard = new Heard(name);
    const hearing = await subscribeLifecycle(conn, heard.handler);
    try {
      await virsh(['start', name]);
      await heard.next(LifecycleEvent.STARTED, 0);
      await virsh(['destroy', name]);
      await heard.next(LifecycleEvent.STOPPED, 0);
      expect(thrown).toBeGreaterThanOrEqual(2);
      expect(logLines.join('')).toContain('event handler threw');
      expect(logLines.join('')).toContain('subscriber bug');
    } finally {
      await throwing.close();
      await hearing.close();
    }
  }, 60_000);

  it('registers for the guest agent lifecycle too', async () => {
    const sub = await subscribeAgentLifecycle(conn, () => undefined);
    expect(sub.callbackId).toBeGreaterThan(0);
    await sub.close();
  });
});
