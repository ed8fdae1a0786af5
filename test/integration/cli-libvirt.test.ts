// The kvm2 CLI's check, get and list against the real libvirtd through the harness's sshd,
// with a second host on a port nobody listens on: exit status, standard output, standard error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliRig, inProcess, kvm2 } from '../harness/cli-rig.js';

const rig = cliRig();
let goodConfig: string;
let mixedConfig: string;

beforeAll(async () => {
  ({ goodConfig, mixedConfig } = await rig.start());
}, 60_000);

afterAll(() => rig.stop());

describe('against the real libvirtd', () => {
  it('check: a healthy host is status 0; an unreachable one makes it 1', async () => {
    const [healthy, mixed, mixedJson, unknown] = await Promise.all([
      kvm2(['check', '--config', goodConfig]),
      kvm2(['check', '--config', mixedConfig]),
      inProcess(['check', '--config', mixedConfig, '--host', 'h2', '--json']),
      inProcess(['check', '--config', goodConfig, '--host', 'h9']),
    ]);
    expect(healthy.stderr).toBe('');
    expect(healthy.code).toBe(0);
    const [header, row] = healthy.stdout.trim().split('\n');
    expect(header).toMatch(
      /^HOST\s+ZONE\s+STATUS\s+REASON\s+LIBVIRT\s+POOL FREE\s+DOMAINS\s+MS\s+MESSAGE$/,
    );
    expect(row).toMatch(/^h1\s+-\s+healthy\s+ok\s+\d+\.\d+\.\d+\s+[\d.]+ \w?i?B\s+\d+\s+\d+\s+\S/);
    expect(mixed.code).toBe(1);
    expect(mixed.stdout).toMatch(/^h1\s+-\s+healthy\s+ok\s/m);
    expect(mixed.stdout).toMatch(/^h2\s+-\s+unhealthy\s+unreachable\s/m);
    expect(mixedJson.code).toBe(1);
    expect(JSON.parse(mixedJson.stdout)).toMatchObject([
      { host: 'h2', status: 'unhealthy', reason: 'unreachable' },
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("--host: host 'h9' is not in the configuration (hosts: h1)");
  }, 60_000);

  it('get of a missing instance is status 1 naming it; list of an unused tag is empty', async () => {
    const [missing, list, listJson] = await Promise.all([
      kvm2(['get', 'h1/kvm2-cli-no-such-vm', '--config', goodConfig]),
      kvm2(['list', '--config', goodConfig, '--tag', 'kvm2-cli-unused-tag']),
      inProcess(['list', '--config', goodConfig, '--tag', 'kvm2-cli-unused-tag', '--json']),
    ]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe("kvm2: no instance 'h1/kvm2-cli-no-such-vm' (ERR_NOT_FOUND)\n");
    expect(list).toMatchObject({ code: 0, stderr: '' });
    expect(list.stdout).toMatch(/^ID\s+STATE\s+ADDRESS\s+CREATED\s+IMAGE\n$/);
    expect(listJson).toMatchObject({ code: 0, stdout: '[]\n' });
  }, 60_000);
});
