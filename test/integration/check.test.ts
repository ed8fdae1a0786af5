// check() against the real libvirtd through the harness's sshd: one report per host, each
// reason produced by the real fault (a closed port, a refused key, a changed host key, a pool
// or network that is missing or stopped, a listener that never speaks), with virsh as the
// witness for the facts, and the probe's connection gone once the report is out.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoragePoolGetInfo } from '../../src/libvirt/protocol.gen.js';
import { DEFAULT_SOCKET } from '../../src/libvirt/transport/uri.js';
import { checkHost, checkHosts, type HealthReport } from '../../src/provider/operations/check.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { createContext, type ProviderContext } from '../../src/provider/core/host-context.js';
import { freePort, startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';
import { memoryLogger, memoryTracing } from '../harness/telemetry.js';

const { exporter, tracerProvider, tracer } = memoryTracing('check-test');
const contextManager = new AsyncLocalStorageContextManager();
const { logger, lines: logLines } = memoryLogger('info');

let sshd: Sshd;
let tmp: string;
const contexts: ProviderContext[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

type HostInput = Record<string, unknown> & { name: string; uri: string };

/** A context over these hosts; domain type qemu and a bridge unless a test says otherwise. */
function contextFor(hosts: HostInput[], health: Record<string, unknown> = {}): ProviderContext {
  const config = parseConfig({
    hosts: hosts.map((h) => ({
      pool: 'default',
      domainType: 'qemu',
      ...(h.network === undefined ? { bridge: 'br0' } : {}),
      ...h,
    })),
    health,
  });
  const ctx = createContext(config, { logger, tracer });
  contexts.push(ctx);
  return ctx;
}

/** An SSH URI to any loopback port, with the harness's key and known_hosts unless overridden. */
function sshUri(port: number, params: Record<string, string> = {}): string {
  const query = new URLSearchParams({
    keyfile: sshd.clientKeyPath,
    known_hosts: sshd.knownHostsPath,
    ...params,
  });
  return `qemu+ssh://root@127.0.0.1:${port}/system?${query.toString()}`;
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 3_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

async function expectSessionsGone(): Promise<void> {
  expect(await eventually(async () => (await sshd.sessionCount()) === 0)).toBe(true);
}

/** A TCP listener that accepts and never says a word (not even an SSH banner). */
async function silentListener(): Promise<{ port: number; open: () => number; accepted: number[] }> {
  const sockets = new Set<net.Socket>();
  const accepted: number[] = [];
  const server = net.createServer((socket) => {
    accepted.push(performance.now());
    sockets.add(socket);
    // Reads and drops what the client says, so its FIN is seen and the socket closes.
    socket.resume();
    socket.on('close', () => sockets.delete(socket)).on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const address = server.address() as net.AddressInfo;
  return { port: address.port, open: () => sockets.size, accepted };
}

/**
 * A UNIX-socket proxy in front of libvirtd that passes everything except the replies to one
 * procedure, which it swallows: a daemon that answers the opening sequence and then stalls.
 */
async function swallowingProxy(proc: number): Promise<{ socketPath: string; open: () => number }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-chk-proxy-'));
  const socketPath = path.join(dir, 'sock');
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const daemon = net.connect(DEFAULT_SOCKET);
    sockets.add(client);
    let buffered = Buffer.alloc(0);
    client.on('data', (d: Buffer) => daemon.write(d));
    // Frames: length (4, itself included), program, version, procedure, … (RFC 4506 XDR).
    daemon.on('data', (d: Buffer) => {
      buffered = Buffer.concat([buffered, d]);
      while (buffered.length >= 16 && buffered.length >= buffered.readUInt32BE(0)) {
        const length = buffered.readUInt32BE(0);
        const frame = buffered.subarray(0, length);
        buffered = buffered.subarray(length);
        if (frame.readUInt32BE(12) !== proc && !client.destroyed) client.write(frame);
      }
    });
    const end = (): void => {
      sockets.delete(client);
      client.destroy();
      daemon.destroy();
    };
    client.on('close', end).on('error', end);
    daemon.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });
  return { socketPath, open: () => sockets.size };
}

beforeAll(async () => {
  context.setGlobalContextManager(contextManager.enable());
  sshd = await startSshd();
  tmp = await mkdtemp(path.join(os.tmpdir(), 'kvm2-chk-'));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await Promise.all(contexts.map((c) => c.hosts.close()));
  await sshd.stop();
  await rm(tmp, { recursive: true, force: true });
  context.disable();
  await tracerProvider.shutdown();
});

describe('a host that answers', () => {
  it('reports ok with the versions, hostname, pool figures and domain count virsh sees', async () => {
    const ctx = contextFor([{ name: 'system', uri: sshd.uri('/system'), zone: 'z1' }]);
    const domainsBefore = (await virsh(['list', '--all', '--name'])).split('\n').filter(Boolean);
    const report = await checkHost(ctx, 'system');
    const domainsAfter = (await virsh(['list', '--all', '--name'])).split('\n').filter(Boolean);

    expect(report).toMatchObject({ host: 'system', zone: 'z1', status: 'healthy', reason: 'ok' });
    const version = await virsh(['version']);
    expect(report.details.libvirtVersion).toBe(/Using library: libvirt (\S+)/.exec(version)?.[1]);
    expect(report.details.hypervisorVersion).toBe(
      /Running hypervisor: \S+ (\S+)/.exec(version)?.[1],
    );
    expect(report.details.hostname).toBe((await virsh(['hostname'])).trim());
    const info = await virsh(['pool-info', 'default', '--bytes']);
    const figure = (name: string): number =>
      Number(new RegExp(`${name}:\\s+(\\d+)`).exec(info)?.[1]);
    expect(report.details.poolCapacityBytes).toBe(figure('Capacity'));
    // Other work on this machine may write to the pool's filesystem meanwhile.
    expect(Math.abs((report.details.poolAvailableBytes ?? 0) - figure('Available'))).toBeLessThan(
      2 ** 30,
    );
    const counts = [domainsBefore.length, domainsAfter.length];
    expect(report.details.domainCount).toBeGreaterThanOrEqual(Math.min(...counts));
    expect(report.details.domainCount).toBeLessThanOrEqual(Math.max(...counts));
    expect(report.message).toContain(`libvirt ${report.details.libvirtVersion}`);
    expect(Date.parse(report.checkedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(report.durationMs).toBeGreaterThan(0);

    const line = logLines.find((l) => l.host === 'system' && l.msg === 'health check');
    expect(line).toMatchObject({ level: 30, status: 'healthy', reason: 'ok' });
    expect(line?.durationMs).toBe(report.durationMs);
    const spans = exporter.getFinishedSpans();
    const check = spans.find(
      (s) => s.name === 'provider.check' && s.attributes['kvm2.host'] === 'system',
    );
    expect(check?.attributes).toMatchObject({
      'kvm2.health.status': 'healthy',
      'kvm2.health.reason': 'ok',
    });
    const dial = spans.find(
      (s) => s.name === 'kvm2.dial' && s.attributes['kvm2.host'] === 'system',
    );
    expect(dial?.parentSpanContext?.spanId).toBe(check?.spanContext().spanId);

    await expectSessionsGone();
  });

  it('checks the network on the libvirt test driver, and reports its figures', async () => {
    const ctx = contextFor([
      {
        name: 'testdrv',
        uri: sshd.uri('/default', {}, 'test'),
        pool: 'default-pool',
        network: 'default',
      },
    ]);
    const report = await checkHost(ctx, 'testdrv');
    const witness = 'test:///default'; // a fresh test driver: the same fixed contents
    expect(report).toMatchObject({ status: 'healthy', reason: 'ok' });
    expect(report.details).toMatchObject({
      libvirtVersion: '9.0.0',
      hypervisorVersion: /Running hypervisor: \S+ (\S+)/.exec(
        await virsh(['version'], witness),
      )?.[1],
      domainCount: (await virsh(['list', '--all', '--name'], witness)).split('\n').filter(Boolean)
        .length,
    });
    expect(report.details.poolCapacityBytes).toBeGreaterThan(0);
    await expectSessionsGone();
  });

  it('checks domain type kvm against the capabilities virsh shows', async () => {
    const caps = await virsh(['capabilities']);
    const kvm = /<arch name='x86_64'>[\s\S]*?<domain type='kvm'\/>[\s\S]*?<\/arch>/.test(caps);
    const ctx = contextFor([{ name: 'kvm', uri: sshd.uri('/system'), domainType: 'kvm' }]);
    const report = await checkHost(ctx, 'kvm');
    expect(report.reason).toBe(kvm ? 'ok' : 'kvm_unavailable');
  });

  it('reports kvm_unavailable when the host offers no kvm domains for x86_64', async () => {
    const ctx = contextFor([
      {
        name: 'nokvm',
        uri: sshd.uri('/default', {}, 'test'),
        pool: 'default-pool',
        domainType: 'kvm',
      },
    ]);
    const report = await checkHost(ctx, 'nokvm');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'kvm_unavailable' });
    expect(report.message).toContain('x86_64');
    expect(report.details.libvirtVersion).toBe('9.0.0');
  });
});

describe('dial failures', () => {
  it('reports unreachable for a closed port, with no details', async () => {
    const ctx = contextFor([{ name: 'closed', uri: sshUri(await freePort()) }]);
    const report = await checkHost(ctx, 'closed');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'unreachable', details: {} });
    expect(report.message).toContain('ECONNREFUSED');
  });

  it('reports auth_failed for a key the host does not accept', async () => {
    const stranger = await sshd.makeKey('stranger');
    const uri = sshd.uri('/system', { keyfile: stranger.privatePath });
    const report = await checkHost(contextFor([{ name: 'auth', uri }]), 'auth');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'auth_failed', details: {} });
  });

  it('reports host_key_mismatch when known_hosts holds another key for the host', async () => {
    const other = await sshd.makeKey('other-host');
    const knownHosts = path.join(tmp, 'known_hosts.other');
    await sshd.writeKnownHosts(knownHosts, [other]);
    const uri = sshd.uri('/system', { known_hosts: knownHosts });
    const report = await checkHost(contextFor([{ name: 'mismatch', uri }]), 'mismatch');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'host_key_mismatch' });
  });

  it('reports host_key_unknown when known_hosts does not know the host', async () => {
    const knownHosts = path.join(tmp, 'known_hosts.empty');
    await writeFile(knownHosts, '');
    const uri = sshd.uri('/system', { known_hosts: knownHosts });
    const report = await checkHost(contextFor([{ name: 'unknown', uri }]), 'unknown');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'host_key_unknown' });
  });

  it('reports socket_unavailable when the host has no libvirt socket there', async () => {
    const uri = sshd.uri('/system', { socket: path.join(tmp, 'no-such-sock') });
    const report = await checkHost(contextFor([{ name: 'nosock', uri }]), 'nosock');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'socket_unavailable' });
    await expectSessionsGone();
  });
});

describe('pool and network', () => {
  it('reports pool_not_found, still saying which libvirt answered', async () => {
    const pool = uniqueName('kvm2-chk-nopool');
    const ctx = contextFor([{ name: 'nopool', uri: sshd.uri('/system'), pool }]);
    const report = await checkHost(ctx, 'nopool');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'pool_not_found' });
    expect(report.message).toContain(pool);
    expect(report.details.libvirtVersion).toMatch(/^\d+\.\d+\.\d+$/);
    expect(report.details.hostname).toBe((await virsh(['hostname'])).trim());
    expect(report.details.poolCapacityBytes).toBeUndefined();
    await expectSessionsGone();
  });

  it('reports pool_inactive for a pool that is defined but not started', async () => {
    const pool = uniqueName('kvm2-chk-pool');
    const target = await mkdtemp(path.join(tmp, 'pool-'));
    await virsh(['pool-define-as', pool, 'dir', '--target', target]);
    cleanups.push(() => virsh(['pool-undefine', pool]));
    const ctx = contextFor([{ name: 'stopped', uri: sshd.uri('/system'), pool }]);
    const report = await checkHost(ctx, 'stopped');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'pool_inactive' });
    expect(report.details.libvirtVersion).toBeDefined();
  });

  it('reports network_not_found', async () => {
    const network = uniqueName('kvm2-chk-nonet');
    const ctx = contextFor([{ name: 'nonet', uri: sshd.uri('/system'), network }]);
    const report = await checkHost(ctx, 'nonet');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'network_not_found' });
    expect(report.message).toContain(network);
    expect(report.details.poolAvailableBytes).toBeGreaterThan(0);
  });

  it('reports network_inactive for an isolated network that is defined but not started', async () => {
    const network = uniqueName('kvm2-chk-net');
    const bridge = `kvchk${Math.random().toString(36).slice(2, 8)}`;
    const xml = path.join(tmp, `${network}.xml`);
    await writeFile(xml, `<network><name>${network}</name><bridge name='${bridge}'/></network>`);
    await virsh(['net-define', xml]);
    cleanups.push(() => virsh(['net-undefine', network]));
    const ctx = contextFor([{ name: 'netdown', uri: sshd.uri('/system'), network }]);
    const report = await checkHost(ctx, 'netdown');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'network_inactive' });
  });

  it('reports pool_low_space (degraded) below the threshold, with the pool figures', async () => {
    const info = await virsh(['pool-info', 'default', '--bytes']);
    const available = Number(/Available:\s+(\d+)/.exec(info)?.[1]);
    const ctx = contextFor([{ name: 'full', uri: sshd.uri('/system') }], {
      poolLowSpaceBytes: available + 2 ** 40,
    });
    const report = await checkHost(ctx, 'full');
    expect(report).toMatchObject({ status: 'degraded', reason: 'pool_low_space' });
    expect(report.details.poolAvailableBytes).toBeGreaterThan(0);
    expect(report.details.poolCapacityBytes).toBeGreaterThan(0);
  });

  it('names the more pressing problem when there are several', async () => {
    const ctx = contextFor([
      { name: 'both', uri: sshd.uri('/system'), pool: 'kvm2-chk-none', network: 'kvm2-none' },
    ]);
    expect((await checkHost(ctx, 'both')).reason).toBe('pool_not_found');
  });
});

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
    const silent = ['s1', 's2', 's3'].map((name) => ({ name, uri: sshUri(listener.port) }));
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
        { name: 'a1', uri: sshUri(listener.port) },
        { name: 'a2', uri: sshUri(listener.port) },
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
