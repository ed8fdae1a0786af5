// The worker's per-host pause (workers/run/host-breaker.ts): which failures say a host is away,
// and the pause → probe → resume cycle, on fake timers (the real cycle against a stopped sshd
// is in test/integration/fleet-hosts.test.ts).
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DialError } from '../../src/libvirt/transport/dial-error.js';
import { Kvm2Error } from '../../src/errors/error.js';
import {
  FIRST_PROBE_MS,
  HostBreakers,
  MAX_PROBE_MS,
  hostAway,
} from '../../workers/run/host-breaker.js';

const refused = (): DialError => new DialError('connect ECONNREFUSED', 'tcp', 'h1', 'unreachable');

describe('hostAway', () => {
  it('is the dial failure that says the host is not there, in the error or its causes', () => {
    const e = refused();
    expect(hostAway(e)).toBe(e);
    expect(hostAway(new Kvm2Error('ERR_LIBVIRT_CLOSED', 'lost', { cause: e }))).toBe(e);
    expect(hostAway(new DialError('slow', 'handshake', 'h1', 'timeout'))).toBeDefined();
    expect(
      hostAway(new DialError('no socket', 'forward', 'h1', 'socket_unavailable')),
    ).toBeDefined();
  });

  it('is not a refusal (the host answered), nor any other error', () => {
    expect(hostAway(new DialError('denied', 'auth', 'h1', 'auth_failed'))).toBeUndefined();
    expect(
      hostAway(new DialError('changed', 'hostkey', 'h1', 'host_key_mismatch')),
    ).toBeUndefined();
    expect(hostAway(new Error('pool full'))).toBeUndefined();
    expect(hostAway(undefined)).toBeUndefined();
    const loop: { cause?: unknown } = {};
    loop.cause = loop;
    expect(hostAway(loop)).toBeUndefined();
  });
});

describe('HostBreakers', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function rig(probeResults: (Error | undefined)[]) {
    const calls: string[] = [];
    const breakers = new HostBreakers({
      pause: (host) => {
        calls.push(`pause ${host}`);
        return Promise.resolve();
      },
      resume: (host) => {
        calls.push(`resume ${host}`);
        return Promise.resolve();
      },
      probe: (host) => {
        calls.push(`probe ${host}`);
        const r = probeResults.shift();
        return r === undefined ? Promise.resolve() : Promise.reject(r);
      },
      logger: pino({ level: 'silent' }),
    });
    return { breakers, calls };
  }

  it('pauses once, probes after 1 s then twice as long each time, and resumes when a dial succeeds', async () => {
    const { breakers, calls } = rig([refused(), refused(), undefined]);
    expect(breakers.failed('h1', refused())).toBe(true);
    expect(breakers.failed('h1', refused())).toBe(true); // already paused: nothing more
    expect(calls).toEqual(['pause h1']);
    expect(breakers.openHosts()).toEqual(['h1']);
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    expect(calls).toEqual(['pause h1', 'probe h1']);
    await vi.advanceTimersByTimeAsync(2 * FIRST_PROBE_MS - 1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(4 * FIRST_PROBE_MS);
    expect(calls).toEqual(['pause h1', 'probe h1', 'probe h1', 'probe h1', 'resume h1']);
    expect(breakers.isOpen('h1')).toBe(false);
  });

  it('leaves other errors and other hosts alone; a probe refused by the host resumes too', async () => {
    const { breakers, calls } = rig([new DialError('denied', 'auth', 'h2', 'auth_failed')]);
    expect(breakers.failed('h1', new Error('pool full'))).toBe(false);
    expect(breakers.failed('h2', refused())).toBe(true);
    expect(breakers.isOpen('h1')).toBe(false);
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    expect(calls).toEqual(['pause h2', 'probe h2', 'resume h2']);
  });

  it('waits at most 15 s between probes, and stops probing once closed', async () => {
    const { breakers, calls } = rig(Array.from({ length: 20 }, () => refused()));
    breakers.failed('h1', refused());
    let waited = 0;
    for (let wait = FIRST_PROBE_MS; wait < MAX_PROBE_MS; wait *= 2) waited += wait;
    await vi.advanceTimersByTimeAsync(waited + 3 * MAX_PROBE_MS);
    const probes = calls.filter((c) => c === 'probe h1').length;
    expect(probes).toBe(4 + 3);
    breakers.close();
    await vi.advanceTimersByTimeAsync(10 * MAX_PROBE_MS);
    expect(calls.filter((c) => c === 'probe h1')).toHaveLength(probes);
    expect(breakers.failed('h3', refused())).toBe(false);
  });
});
