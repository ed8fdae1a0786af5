// check() against the clock: a host that accepts and never speaks, a daemon that stalls
// mid-probe, a round over several hosts at once, the caller's abort. The real libvirtd through
// the harness's sshd, and no connection left behind once the report (or the rejection) is out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoragePoolGetInfo } from '../../src/libvirt/protocol.gen.js';
import { checkHost, checkHosts, type HealthReport } from '../../src/provider/operations/check.js';
import { checkRig, eventually } from '../harness/check-rig.js';
import { freePort, type Sshd } from '../harness/sshd.js';

const rig = checkRig();
const { contextFor, expectSessionsGone, silentListener, sshUri, swallowingProxy } = rig;
let sshd: Sshd;

beforeAll(async () => {
  ({ sshd } = await rig.start());
});

afterAll(() => rig.stop());

describe('time', () => {
  it('reports timeout within the budget when the host accepts and never speaks', async () => {
    const listener = await silentListener();
    const ctx = contextFor([{ name: 'silent', uri: sshUri(listener.port) }], { timeout: '500ms' });
    const started = performance.now();
    const report = await checkHost(ctx, 'silent');
    // Ended by the round's 500 ms, not by a dial timeout of its own (10 s): room for a loaded machine.
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'timeout', details: {} });
    expect(report.message).toMatch(/500 ms.*dialing/);
    expect(report.durationMs).toBeGreaterThanOrEqual(490);
    expect(await eventually(async () => Promise.resolve(listener.open() === 0))).toBe(true);
  });

  it('reports timeout mid-probe with the details gathered so far', async () => {
    const proxy = await swallowingProxy(StoragePoolGetInfo.proc);
    const uri = sshd.uri('/system', { socket: proxy.socketPath });
    const ctx = contextFor([{ name: 'stall', uri }], { timeout: '1s' });
    const report = await checkHost(ctx, 'stall');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'timeout' });
    expect(report.message).toContain('waiting for StoragePoolGetInfo');
    expect(report.details.libvirtVersion).toMatch(/^\d+\.\d+\.\d+$/);
    expect(report.details.hostname).toBeDefined();
    expect(report.details.poolAvailableBytes).toBeUndefined();
    expect(await eventually(async () => Promise.resolve(proxy.open() === 0))).toBe(true);
    await expectSessionsGone();
  });

  it('checks all hosts at once: the round takes as long as the slowest host', async () => {
    const listener = await silentListener();
    // A daemon each, as the configuration requires (its socket; the listener answers none).
    const silent = ['s1', 's2', 's3'].map((name) => ({
      name,
      uri: sshUri(listener.port, { socket: `/run/libvirt/${name}-sock` }),
    }));
    const ctx = contextFor(
      [
        ...silent,
        { name: 'good', uri: sshd.uri('/system') },
        { name: 'gone', uri: sshUri(await freePort()) },
      ],
      // Long enough that the real probe of 'good' ends well inside it on a loaded machine.
      { timeout: '4s' },
    );
    const started = performance.now();
    const reports = await checkHosts(ctx);
    const elapsed = performance.now() - started;
    expect(reports.map((r: HealthReport) => [r.host, r.reason])).toEqual([
      ['s1', 'timeout'],
      ['s2', 'timeout'],
      ['s3', 'timeout'],
      ['good', 'ok'],
      ['gone', 'unreachable'],
    ]);
    // One after another the three silent hosts alone would take 12 s; together, one timeout.
    expect(elapsed).toBeLessThan(8_000);
    // All three dialed before the first one's round could have ended.
    const [first, ...rest] = listener.accepted;
    for (const at of rest) expect(at - (first ?? 0)).toBeLessThan(2_000);
    expect(await eventually(async () => Promise.resolve(listener.open() === 0))).toBe(true);
    await expectSessionsGone();

    const some = await checkHosts(ctx, { hosts: ['gone', 'good'] });
    expect(some.map((r) => r.host)).toEqual(['gone', 'good']);
  });

  it("rejects with the caller's abort, not a report, and leaves no connection behind", async () => {
    const listener = await silentListener();
    const ctx = contextFor(
      [
        { name: 'a1', uri: sshUri(listener.port, { socket: '/run/libvirt/a1-sock' }) },
        { name: 'a2', uri: sshUri(listener.port, { socket: '/run/libvirt/a2-sock' }) },
      ],
      { timeout: '10s' },
    );
    const started = performance.now();
    await expect(checkHost(ctx, 'a1', { signal: AbortSignal.timeout(200) })).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    await expect(checkHosts(ctx, { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await eventually(async () => Promise.resolve(listener.open() === 0))).toBe(true);
  });

  it('refuses a host that is not configured before dialing anything', async () => {
    const ctx = contextFor([{ name: 'only', uri: sshUri(await freePort()) }]);
    await expect(checkHost(ctx, 'nobody')).rejects.toMatchObject({ code: 'ERR_UNKNOWN_HOST' });
    await expect(checkHosts(ctx, { hosts: ['only', 'nobody'] })).rejects.toMatchObject({
      code: 'ERR_UNKNOWN_HOST',
    });
  });
});
