// The Debian cloud image with real cloud-init, through the queue (issue #17): what users boot.
// A real `kvm2 worker` creates the guest from the image served over HTTP through the image
// cache, under TCG. Its user-data carries `write_files`, `runcmd` and `packages` of its own, and
// `bootcmd` lines that report every boot on the serial console; its network-config gives a
// static address on the isolated bridge; the image's configuration adds a vendor cloud-config
// part (images.<name>.vendorData). Shown, from the guest's own words on its console: cloud-init
// finished with no errors from the NoCloud seed, with the seed's hostname and instance-id; the
// merge cloud-init really does (user-data's runcmd replaced the vendor part's, the vendor's
// final_message stayed); kvm2's vendor script ran and the agent runs although user-data set
// `runcmd` and `packages`. From the result stream: `succeeded`, `running`, the agent's address.
//
// Then a retry that boots the guest again: worker A is killed while the create waits for the
// address, the guest finishes its first boot, the domain is destroyed (its host went down), and
// worker B takes the stalled job up. It adopts the domain and starts it: the second boot has
// the same instance-id, so cloud-init's per-instance modules (runcmd, the vendor script) do not
// run again. The deletes leave no domain, volume or NVRAM. Printed: enqueue → address.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_SERIAL_LOG_DIR } from '../../src/provider/config/schema.js';
import { macForUid, serialLogFile } from '../../src/provider/core/ids.js';
import {
  describeCloudImage,
  ensureCloudImage,
  fileSha256,
  staticNetworkConfig,
  type CloudImage,
} from '../harness/cloud-image.js';
import { waitUntil } from '../harness/fault-kit.js';
import { startQueueFleet, TEST_WORKER, type QueueFleet } from '../harness/queue-fleet.js';
import { resultsOfJob } from '../harness/results.js';
import { virsh } from '../harness/virsh.js';
import type { Kvm2Client } from '../../queues/client.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

let image: CloudImage;
let fleet: QueueFleet;
const workers: WorkerProcess[] = [];
let baseVolume = '';
let configPath = '';

/**
 * An operator's vendor cloud-config (images.<name>.vendorData), to show cloud-init's merge:
 * its runcmd is replaced by user-data's, its final_message (not in user-data) stays.
 */
const VENDOR = `#cloud-config\n${JSON.stringify({
  runcmd: ['echo "kvm2-test: vendor-runcmd" >/dev/ttyS0'],
  final_message: 'kvm2-test: vendor-final-message',
})}\n`;

/** Boots under TCG: cloud-init is done ~130 s after start on this 2-core machine. */
const BOOT_MS = 420_000;

beforeAll(async () => {
  image = await ensureCloudImage();
  process.stdout.write(`[cloud-guest] image ${describeCloudImage(image)}\n`);
  fleet = await startQueueFleet('cg');
  fleet.images.serve('/debian-12.qcow2', { file: image.path });
  const sha256 = await fileSha256(image.path);
  baseVolume = `kvm2-base-${sha256}.qcow2`;
  const base = fleet.configObject();
  configPath = fleet.writeConfig({
    images: {
      ...(base['images'] as Record<string, unknown>),
      debian: {
        url: fleet.images.url('/debian-12.qcow2'),
        sha256,
        format: 'qcow2',
        vendorData: [{ contentType: 'text/cloud-config', filename: 'test.cfg', content: VENDOR }],
      },
    },
    defaults: { vcpus: 1, memoryMiB: 512, diskGiB: 2, addressTimeout: '400s' },
    worker: { ...TEST_WORKER, addressPoll: '3s' },
  });
}, 900_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await fleet?.cleanup();
  await virsh(['vol-delete', '--pool', 'default', baseVolume]).catch(() => undefined);
  await virsh(['vol-delete', '--pool', 'default', `${baseVolume}.sha256`]).catch(() => undefined);
}, 120_000);

/** A line the guest printed: `kvm2-test: <kind> <rest>`, the rest without the line end. */
function reported(log: string, kind: string): string[] {
  const lines: string[] = [];
  for (const m of log.matchAll(new RegExp(`kvm2-test: ${kind} ([^\\r\\n]*)`, 'g'))) {
    lines.push(m[1] ?? '');
  }
  return lines;
}

/**
 * The user-data: cloud-config in JSON form (YAML reads it). bootcmd runs at every boot: it
 * reports the instance-id cloud-init settled on and the instances it has seen, and starts a
 * unit that waits for cloud-init to finish, syncs, and prints its status and result.json.
 * write_files and runcmd are per instance: the sentinel is printed once per instance, never
 * again.
 * `packages` names one the image has (the guest has no route out; apt's index refresh fails
 * softly, the install finds it installed).
 */
function userData(sentinel: string): string {
  const tty = '>/dev/ttyS0';
  const report = [
    'cloud-init status --wait >/dev/null 2>&1',
    `echo "kvm2-test: status $(cloud-init status --long 2>&1 | tr "\\n" " ")" ${tty}`,
    `echo "kvm2-test: result $(tr -d "\\n" </run/cloud-init/result.json)" ${tty}`,
    // On disk before the last line, which the test waits for: the retry destroys the domain
    // (a power cut), and cloud-init's records (and the boot counter) written in the last
    // seconds would otherwise be lost with the guest's page cache (fresh-check saw boot 2
    // counted as 1).
    'sync',
    `echo "kvm2-test: agent $(systemctl is-active qemu-guest-agent)" ${tty}`,
  ].join('; ');
  const config = {
    bootcmd: [
      'n=$(($(cat /var/lib/kvm2-test-boots 2>/dev/null || echo 0) + 1)); echo $n >/var/lib/kvm2-test-boots',
      `echo "kvm2-test: boot n=$(cat /var/lib/kvm2-test-boots) instance-id=$(cat /var/lib/cloud/data/instance-id) instances=$(ls /var/lib/cloud/instances | tr "\\n" " ")" ${tty}`,
      ['systemd-run', '--no-block', '--unit', 'kvm2-test-report', 'sh', '-c', report],
    ],
    write_files: [{ path: '/var/lib/kvm2-test/sentinel', content: `${sentinel}\n` }],
    packages: ['iproute2'],
    runcmd: [
      `echo "kvm2-test: runcmd sentinel=$(cat /var/lib/kvm2-test/sentinel) hostname=$(hostname) vendor-scripts=$(ls /var/lib/cloud/instance/scripts/vendor | tr "\\n" " ")" ${tty}`,
      `echo "kvm2-test: runcmd-script $(wc -l </var/lib/cloud/instance/scripts/runcmd) lines" ${tty}`,
    ],
  };
  return `#cloud-config\n${JSON.stringify(config, null, 1)}\n`;
}

interface Guest {
  readonly uid: string;
  readonly name: string;
  readonly address: string;
  readonly sentinel: string;
  readonly request: Parameters<Kvm2Client['create']>[0];
  readLog(): string;
}

/** A guest's request: a static address on the isolated bridge, matched by kvm2's MAC. */
function guest(suffix: string): Guest {
  const uid = randomUUID();
  const name = fleet.name(suffix);
  const address = `192.0.2.${10 + Math.floor(Math.random() * 240)}`;
  const networkConfig = staticNetworkConfig(macForUid(uid), address);
  const sentinel = `sentinel-${randomUUID()}`;
  const serialLog = serialLogFile(DEFAULT_SERIAL_LOG_DIR, name);
  return {
    uid,
    name,
    address,
    sentinel,
    request: {
      host: 'h1',
      name,
      uid,
      image: 'debian',
      tag: 'cloud-guest',
      userData: userData(sentinel),
      networkConfig,
    },
    readLog: () => (fs.existsSync(serialLog) ? fs.readFileSync(serialLog, 'utf8') : ''),
  };
}

/** Waits for the end of a boot's cloud-init run (the report's last line) and returns the log. */
async function bootReport(g: Guest, what: string): Promise<string> {
  await waitUntil(() => reported(g.readLog(), 'agent').length > 0, BOOT_MS, what);
  return g.readLog();
}

/** A first boot: cloud-init ran the seed (NoCloud, its hostname and instance-id), no errors. */
function expectFirstBoot(g: Guest, log: string): void {
  expect(reported(log, 'boot'), log.slice(-4000)).toEqual([
    `n=1 instance-id=${g.uid} instances=${g.uid} `,
  ]);
  expect(reported(log, 'runcmd')).toEqual([
    `sentinel=${g.sentinel} hostname=${g.name} vendor-scripts=kvm2-guest-agent.sh `,
  ]);
  // The merge cloud-init really does: user-data's runcmd replaced the vendor part's (the
  // script holds the shebang and the user's two lines; the vendor's line never printed),
  // while the vendor part's final_message, a key user-data does not set, stayed. kvm2's
  // vendor script, not cloud-config, ran whatever user-data said.
  expect(reported(log, 'runcmd-script')).toEqual(['3 lines']);
  expect(log).not.toContain('kvm2-test: vendor-runcmd');
  expect(log).toContain('kvm2-test: vendor-final-message');
  expect(log).toContain('kvm2-vendor-data: qemu-guest-agent is installed');
  expect(log).toMatch(/kvm2-vendor-data: qemu-guest-agent (is running|started)/);
  expectCloudInitDone(log);
  expect(reported(log, 'agent')).toEqual(['active']);
}

function expectCloudInitDone(log: string): void {
  const status = reported(log, 'status')[0] ?? '';
  expect(status).toMatch(/^status: done /);
  expect(status).toContain('DataSourceNoCloud [seed=/dev/vdb]');
  const result = JSON.parse(reported(log, 'result')[0] ?? 'null') as {
    v1: { datasource: string; errors: unknown[] };
  };
  expect(result.v1.errors).toEqual([]);
  expect(result.v1.datasource).toMatch(/^DataSourceNoCloud \[seed=\/dev\/vdb\]/);
}

async function deleteAndExpectNothingLeft(client: Kvm2Client, g: Guest): Promise<void> {
  const deleted = await client.delete(`h1/${g.name}`);
  expect((await client.waitFor(deleted.jobId, { timeoutMs: 60_000 })).outcome).toBe('succeeded');
  expect(await fleet.domains()).toEqual([]);
  expect(await fleet.volumes()).toEqual([]);
  expect(fs.existsSync(`/var/lib/libvirt/qemu/nvram/${g.name}_VARS.fd`)).toBe(false);
}

it(
  'a create through the queue: cloud-init runs the seed, the agent reports the address',
  async () => {
    const g = guest('debian');
    const worker = await startWorkerProcess(configPath);
    workers.push(worker);
    const client = fleet.client();
    try {
      const t0 = Date.now();
      const queued = await client.create(g.request);
      const done = await client.waitFor(queued.jobId, { timeoutMs: BOOT_MS });
      const addressMs = Date.now() - t0;
      expect(done).toMatchObject({
        outcome: 'succeeded',
        op: 'create',
        instanceId: `h1/${g.name}`,
        state: 'running',
        address: g.address,
      });
      expect(await resultsOfJob(fleet.scope.redis, fleet.scope.prefix, queued.jobId)).toHaveLength(
        1,
      );
      const log = await bootReport(g, 'cloud-init to finish');
      const cloudInitMs = Date.now() - t0;
      expectFirstBoot(g, log);
      process.stdout.write(
        `[cloud-guest] enqueue → succeeded with the agent's address ${(addressMs / 1000).toFixed(1)} s; → cloud-init done (seen by the test) ${(cloudInitMs / 1000).toFixed(1)} s\n`,
      );
      await deleteAndExpectNothingLeft(client, g);
    } finally {
      await worker.stop();
      await client.close();
    }
  },
  BOOT_MS * 2,
);

it(
  'a retry that boots the guest again keeps its instance-id: cloud-init runs nothing per-instance twice',
  async () => {
    const g = guest('retry');
    const client = fleet.client();
    try {
      // Worker A: killed once the domain runs, before the guest has an address.
      const a = await startWorkerProcess(configPath);
      workers.push(a);
      const queued = await client.create(g.request);
      await waitUntil(
        async () => (await virsh(['domstate', g.name]).catch(() => '')).trim() === 'running',
        300_000,
        `domain ${g.name} to run`,
      );
      a.kill('SIGKILL');
      await a.exited;
      expectFirstBoot(g, await bootReport(g, 'the first boot'));

      // The host "went down" under the guest; worker B takes the stalled create up, adopts the
      // domain and starts it.
      await virsh(['destroy', g.name]);
      const b = await startWorkerProcess(configPath);
      workers.push(b);
      const restartedAt = Date.now();
      const done = await client.waitFor(queued.jobId, { timeoutMs: BOOT_MS });
      const addressMs = Date.now() - restartedAt;
      expect(done).toMatchObject({ outcome: 'succeeded', state: 'running', address: g.address });
      expect(b.logs.some((l) => l.msg === 'adopting the domain a previous attempt defined')).toBe(
        true,
      );
      // The second boot (the serial log starts afresh at each start): the same instance, nothing
      // per-instance again (no runcmd, no vendor script), cloud-init done without errors.
      const second = await bootReport(g, 'the second boot');
      expect(reported(second, 'boot')).toEqual([`n=2 instance-id=${g.uid} instances=${g.uid} `]);
      expect(reported(second, 'runcmd')).toEqual([]);
      expect(second).not.toContain('kvm2-vendor-data:');
      expectCloudInitDone(second);
      process.stdout.write(
        `[cloud-guest] retry: worker B started → succeeded with the address after the second boot ${(addressMs / 1000).toFixed(1)} s\n`,
      );
      await deleteAndExpectNothingLeft(client, g);
    } finally {
      await client.close();
    }
  },
  BOOT_MS * 3,
);
