// check() of hosts that answer, against the real libvirtd through the harness's sshd (the qemu
// driver, and the test driver for fixed contents): the versions, hostname, pool figures and
// domain count virsh sees, the domain type against the capabilities, the log line and spans of a
// round, and the probe's connection gone once the report is out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHost } from '../../src/provider/operations/check.js';
import { checkRig } from '../harness/check-rig.js';
import type { Sshd } from '../harness/sshd.js';
import { virsh } from '../harness/virsh.js';

const rig = checkRig();
const { contextFor, exporter, expectSessionsGone, logLines } = rig;
let sshd: Sshd;

beforeAll(async () => {
  ({ sshd } = await rig.start());
});

afterAll(() => rig.stop());

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
