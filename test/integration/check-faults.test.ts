// check() of hosts it cannot use, each reason produced by the real fault: a closed port, a
// refused key, a changed or unknown host key, no libvirt socket, a pool or network that is
// missing or stopped, a pool short of space. The real libvirtd through the harness's sshd, virsh
// as the witness for the facts, and the probe's connection gone once the report is out.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHost } from '../../src/provider/operations/check.js';
import { checkRig } from '../harness/check-rig.js';
import { dirPool } from '../harness/libvirt-objects.js';
import { freePort, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';

const run = promisify(execFile);
const MiB = 2 ** 20;
const rig = checkRig();
const { cleanups, contextFor, expectSessionsGone, sshUri } = rig;
let sshd: Sshd;
let tmp: string;

beforeAll(async () => {
  ({ sshd, tmp } = await rig.start());
});

afterAll(() => rig.stop());

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

  it("reports auth_failed for a read-only connection (libvirtd's -ro socket), which answers every read", async () => {
    const uri = sshd.uri('/system', { socket: '/run/libvirt/libvirt-sock-ro' });
    const report = await checkHost(contextFor([{ name: 'ro', uri }]), 'ro');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'auth_failed' });
    expect(report.message).toMatch(/read-only/);
    expect(report.details.libvirtVersion).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('refreshes the pool before reading its free space: a disk filled outside libvirt is seen', async () => {
    const mnt = await mkdtemp(path.join(tmp, 'tmpfs-'));
    await run('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mnt]);
    cleanups.push(() => run('umount', [mnt]));
    const pool = await dirPool('kvm2-chk-fill', mnt);
    cleanups.push(() => pool.remove());
    const ctx = contextFor([{ name: 'fill', uri: sshd.uri('/system'), pool: pool.name }], {
      poolLowSpaceBytes: 32 * MiB,
    });
    expect(await checkHost(ctx, 'fill')).toMatchObject({ reason: 'ok' });
    // A guest's overlay growing looks like this to libvirt: bytes written behind its back.
    await writeFile(path.join(mnt, 'filler'), Buffer.alloc(48 * MiB));
    const report = await checkHost(ctx, 'fill');
    expect(report).toMatchObject({ status: 'degraded', reason: 'pool_low_space' });
    expect(report.details.poolAvailableBytes).toBeLessThan(32 * MiB);
  });

  it('reports pool_inactive for a pool whose storage went away (libvirt stops it at the refresh)', async () => {
    const target = path.join(tmp, `gone-${Date.now()}`);
    await mkdir(target);
    const pool = await dirPool('kvm2-chk-gone', target);
    cleanups.push(() => pool.remove());
    const ctx = contextFor([{ name: 'gone', uri: sshd.uri('/system'), pool: pool.name }]);
    expect(await checkHost(ctx, 'gone')).toMatchObject({ reason: 'ok' });
    await rm(target, { recursive: true });
    const report = await checkHost(ctx, 'gone');
    expect(report).toMatchObject({ status: 'unhealthy', reason: 'pool_inactive' });
    expect(report.message).toContain(pool.name);
    expect(await virsh(['pool-info', pool.name])).toMatch(/State:\s+inactive/);
  });

  it('names the more pressing problem when there are several', async () => {
    const ctx = contextFor([
      { name: 'both', uri: sshd.uri('/system'), pool: 'kvm2-chk-none', network: 'kvm2-none' },
    ]);
    expect((await checkHost(ctx, 'both')).reason).toBe('pool_not_found');
  });
});
