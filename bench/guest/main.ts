// bench/guest: the Debian cloud image (scripts/build-cloud-image.sh) booted two ways on the same
// host, from the same cached base image, onto the same isolated network, with the same
// user-data and the same static network-config (issue #17):
//   kvm2         a create enqueued by the client library, carried out by a real `kvm2 worker`
//                (over sshd to the local libvirtd); done when the result stream carries the
//                agent's address
//   virt-install `virt-install --import` (Debian's virtinst 4.1) with the seed as below, an
//                overlay on the same base volume; done when the guest agent reports the
//                address (polled every 250 ms over one connection)
// Each round runs both, in alternating order; the medians of the rounds are printed: start
// (enqueue or command start) → domain running (libvirt's STARTED event), → agent connected
// (libvirt's agent event), → address. Then the two guests' domain XML, side by side where it
// matters (machine, firmware, disks, NIC, channels, consoles, other devices).
//
// virt-install's defaults cannot boot this image twice over. `--boot uefi` picks OVMF with
// secure boot and Microsoft's keys, which refuses the image's unsigned systemd-boot: every run
// here passes secure boot off, as kvm2's domains have it. And `--cloud-init` attaches its ISO
// as a cdrom (SATA on q35, IDE on i440fx), which Debian's cloud kernel does not see (no AHCI
// driver; on i440fx no sr_mod is loaded), so cloud-init never reads the seed: one run with
// `--cloud-init` shows it, in cloud-init's own words read through the agent. The timed rounds
// give virt-install the seed the way cloud-init's NoCloud docs make it (genisoimage, volume id
// cidata), attached with `--disk …,bus=virtio,readonly=on` as kvm2 attaches its own; the
// genisoimage run counts in virt-install's time.
//
//   npm run bench:guest [-- --rounds 3] [--skip-default-check]
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import {
  AgentLifecycleState,
  subscribeAgentLifecycle,
  subscribeLifecycle,
} from '../../src/libvirt/domain-events.js';
import { DomainInterfaceAddresses, DomainLookupByName } from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { macForUid } from '../../src/provider/core/ids.js';
import {
  describeCloudImage,
  ensureCloudImage,
  fileSha256,
  staticNetworkConfig,
} from '../../test/harness/cloud-image.js';
import { startQueueFleet, TEST_WORKER, type QueueFleet } from '../../test/harness/queue-fleet.js';
import { virsh } from '../../test/harness/virsh.js';
import { startWorkerProcess } from '../../test/harness/worker-process.js';
import { median } from '../lib/virsh-ssh.js';

const run = promisify(execFile);
const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'skip-default-check': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const BOOT_TIMEOUT_MS = 300_000;
/** libvirt's VIR_DOMAIN_EVENT_STARTED. */
const EVENT_STARTED = 2;
/** VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT. */
const SRC_AGENT = 1;

interface Timings {
  running: number;
  agent: number;
  address: number;
}

const startedAt = new Map<string, number>();
const agentAt = new Map<string, number>();
let observer: LibvirtConnection;
let fleet: QueueFleet;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-bench-guest-'));

const USER_DATA = `#cloud-config\n${JSON.stringify({
  write_files: [{ path: '/var/lib/bench/sentinel', content: 'bench\n' }],
  runcmd: ['echo bench-runcmd >/dev/ttyS0'],
})}\n`;

let nextHost = 10;
const newAddress = (): string => `192.0.2.${nextHost++}`;

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + BOOT_TIMEOUT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The IPv4 address the agent reports on the NIC with this MAC, if any yet. */
async function agentAddress(name: string, mac: string): Promise<string | undefined> {
  try {
    const { dom } = await observer.call(DomainLookupByName, { name });
    const { ifaces } = await observer.call(DomainInterfaceAddresses, {
      dom,
      source: SRC_AGENT,
      flags: 0,
    });
    const nic = ifaces.find((i) => i.hwaddr?.toLowerCase() === mac);
    return nic?.addrs.find((a) => a.type === 0 && !a.addr.startsWith('169.254.'))?.addr;
  } catch {
    return undefined; // no agent yet
  }
}

async function kvm2Round(): Promise<{ t: Timings; xml: string }> {
  const uid = randomUUID();
  const name = fleet.name(`k${Math.random().toString(36).slice(2, 6)}`);
  const address = newAddress();
  const client = fleet.client();
  try {
    const t0 = Date.now();
    const queued = await client.create({
      host: 'h1',
      name,
      uid,
      image: 'debian',
      tag: 'bench-guest',
      userData: USER_DATA,
      networkConfig: staticNetworkConfig(macForUid(uid), address),
    });
    const result = await client.waitFor(queued.jobId, { timeoutMs: BOOT_TIMEOUT_MS });
    if (result.address !== address) {
      throw new Error(`kvm2: expected ${address}, got ${JSON.stringify(result)}`);
    }
    const t: Timings = {
      running: (startedAt.get(name) ?? NaN) - t0,
      agent: (agentAt.get(name) ?? NaN) - t0,
      address: result.timestamp - t0,
    };
    const xml = await virsh(['dumpxml', '--inactive', name]);
    const deleted = await client.delete(queued.id);
    await client.waitFor(deleted.jobId, { timeoutMs: 120_000 });
    return { t, xml };
  } finally {
    await client.close();
  }
}

interface VirtInstallGuest {
  readonly name: string;
  readonly mac: string;
  readonly t0: number;
}

/**
 * How virt-install gets the seed: `cloud-init` is its own `--cloud-init` option (an ISO it makes,
 * on a cdrom); `disk` is the recipe of cloud-init's NoCloud docs (genisoimage, volume id
 * cidata) attached as a read-only virtio disk, as kvm2 attaches its own.
 */
type SeedWay = 'cloud-init' | 'disk';

async function virtInstall(basePath: string, seedWay: SeedWay): Promise<VirtInstallGuest> {
  const name = fleet.name(`v${Math.random().toString(36).slice(2, 6)}`);
  const mac = `52:54:00:${crypto.randomBytes(3).toString('hex').match(/../g)?.join(':')}`;
  const address = newAddress();
  const files = path.join(dir, name);
  fs.mkdirSync(files);
  fs.writeFileSync(path.join(files, 'user-data'), USER_DATA);
  fs.writeFileSync(
    path.join(files, 'meta-data'),
    `instance-id: ${randomUUID()}\nlocal-hostname: ${name}\n`,
  );
  fs.writeFileSync(path.join(files, 'network-config'), staticNetworkConfig(mac, address));
  const seedFiles = ['user-data', 'meta-data', 'network-config'];
  const t0 = Date.now();
  let seedArgs: string[];
  if (seedWay === 'cloud-init') {
    seedArgs = ['--cloud-init', seedFiles.map((f) => `${f}=${path.join(files, f)}`).join(',')];
  } else {
    // Beside the pool's volumes, where qemu may read it; removed with the domain's storage.
    const iso = `/var/lib/libvirt/images/${name}-seed.iso`;
    await run('genisoimage', [
      '-quiet',
      '-output',
      iso,
      '-volid',
      'cidata',
      '-joliet',
      '-rock',
      ...seedFiles.map((f) => path.join(files, f)),
    ]);
    seedArgs = ['--disk', `path=${iso},device=disk,bus=virtio,readonly=on`];
  }
  await run('virt-install', [
    '--connect',
    'qemu:///system',
    '--import',
    '--name',
    name,
    '--memory',
    '512',
    '--vcpus',
    '1',
    // osinfo-db 20221130 (bookworm's) knows no debian12.
    '--osinfo',
    'debian11',
    // Secure boot off, as kvm2's domains have it: `--boot uefi` alone picks the build with
    // Microsoft's keys enrolled, which refuses the image's unsigned systemd-boot (the guest
    // stops in the firmware's menu).
    '--boot',
    'uefi,firmware.feature0.name=secure-boot,firmware.feature0.enabled=no',
    '--virt-type',
    'qemu',
    '--disk',
    `size=2,backing_store=${basePath},backing_format=qcow2,pool=default`,
    ...seedArgs,
    '--network',
    `network=${fleet.net.name},mac=${mac}`,
    '--graphics',
    'none',
    '--noautoconsole',
  ]);
  return { name, mac, t0 };
}

async function removeVirtInstallGuest(name: string): Promise<void> {
  await virsh(['destroy', name]).catch(() => undefined);
  await virsh(['undefine', '--nvram', '--remove-all-storage', name]).catch(() => undefined);
}

async function virtInstallRound(basePath: string): Promise<{ t: Timings; xml: string }> {
  const g = await virtInstall(basePath, 'disk');
  try {
    await waitFor('virt-install guest address', () => agentAddress(g.name, g.mac), 250);
    const t: Timings = {
      running: (startedAt.get(g.name) ?? NaN) - g.t0,
      agent: (agentAt.get(g.name) ?? NaN) - g.t0,
      address: Date.now() - g.t0,
    };
    return { t, xml: await virsh(['dumpxml', '--inactive', g.name]) };
  } finally {
    await removeVirtInstallGuest(g.name);
  }
}

/** cloud-init's status in the guest, through the agent's guest-exec. */
async function guestCloudInitStatus(name: string): Promise<string> {
  const exec = JSON.parse(
    await virsh([
      'qemu-agent-command',
      name,
      JSON.stringify({
        execute: 'guest-exec',
        arguments: { path: 'cloud-init', arg: ['status', '--long'], 'capture-output': true },
      }),
    ]),
  ) as { return: { pid: number } };
  for (let i = 0; i < 100; i++) {
    const status = JSON.parse(
      await virsh([
        'qemu-agent-command',
        name,
        JSON.stringify({ execute: 'guest-exec-status', arguments: { pid: exec.return.pid } }),
      ]),
    ) as { return: { exited: boolean; 'out-data'?: string } };
    if (status.return.exited) {
      return Buffer.from(status.return['out-data'] ?? '', 'base64').toString('utf8');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return '(no answer)';
}

/** virt-install with its defaults (q35): what becomes of the seed. */
async function defaultCheck(basePath: string): Promise<void> {
  const g = await virtInstall(basePath, 'cloud-init');
  try {
    const xml = await virsh(['dumpxml', g.name]);
    const cdrom =
      /<disk type=.file. device=.cdrom.>[\s\S]*?<target dev='(\w+)' bus='(\w+)'\/>/.exec(xml);
    await waitFor('the agent of the default virt-install guest', () =>
      agentAt.has(g.name) ? true : undefined,
    );
    // cloud-init done (with whatever datasource it found), then its own words.
    const status = await waitFor(
      'cloud-init to finish in the default virt-install guest',
      async () => {
        const s = await guestCloudInitStatus(g.name).catch(() => '');
        return /status: (done|error)/.test(s) ? s : undefined;
      },
      2_000,
    );
    const address = await agentAddress(g.name, g.mac);
    console.log(
      `virt-install defaults (q35): cloud-init seed on a ${cdrom?.[2] ?? '?'} cdrom (${cdrom?.[1] ?? '?'}); ` +
        `after ${((Date.now() - g.t0) / 1000).toFixed(0)} s the guest's address: ${address ?? 'none'}; cloud-init says: ` +
        status.replace(/\s+/g, ' ').trim(),
    );
  } finally {
    await removeVirtInstallGuest(g.name);
  }
}

/** The parts of a domain's XML a user would notice, one line each. */
function salient(xml: string): Map<string, string> {
  const all = (re: RegExp): string[] => [...xml.matchAll(re)].map((m) => m[0].replace(/\s+/g, ' '));
  const out = new Map<string, string>();
  out.set('machine', /machine='([^']+)'/.exec(xml)?.[1] ?? '');
  out.set('firmware', all(/<os[^>]*>|<loader[^>]*>|<nvram[^>]*>/g).join(' '));
  out.set('cpu', all(/<cpu[^>]*\/?>/g).join(' ') || '(none)');
  const disks = all(/<disk [\s\S]*?<\/disk>/g).map((d) => {
    const device = /device='(\w+)'/.exec(d)?.[1];
    const driver = /<driver ([^/]*)\/>/.exec(d)?.[1]?.trim();
    const target = /<target ([^/]*)\/>/.exec(d)?.[1]?.trim();
    return `${device} [${driver ?? ''}] ${target ?? ''}${d.includes('<readonly/>') ? ' readonly' : ''}`;
  });
  out.set('disks', disks.join('; '));
  out.set(
    'nic',
    all(/<interface [\s\S]*?<\/interface>/g)
      .map((i) => /<model type='(\w+)'/.exec(i)?.[1] ?? '?')
      .join('; '),
  );
  out.set(
    'channels',
    all(/<channel [\s\S]*?<\/channel>/g)
      .map((c) => /<target type='virtio' name='([^']+)'/.exec(c)?.[1] ?? c)
      .join('; '),
  );
  out.set(
    'serial/console',
    all(/<(serial|console) type='(\w+)'>[\s\S]*?<\/(serial|console)>/g)
      .map((s) => {
        const log = /<log file='([^']+)'/.exec(s)?.[1];
        return `${/<(serial|console)/.exec(s)?.[1]} ${/type='(\w+)'/.exec(s)?.[1]}${log === undefined ? '' : ` log=${path.basename(log)}`}`;
      })
      .join('; '),
  );
  for (const device of ['rng', 'memballoon', 'graphics', 'video', 'watchdog', 'tpm']) {
    const found = all(new RegExp(`<${device} [^>]*>`, 'g'));
    out.set(device, found.length === 0 ? '(none)' : found.join(' '));
  }
  const controllers = new Map<string, number>();
  for (const c of all(/<controller [^>]*>/g)) {
    const kind = `${/type='([^']+)'/.exec(c)?.[1] ?? '?'}${/model='([^']+)'/.exec(c) ? `/${/model='([^']+)'/.exec(c)?.[1]}` : ''}`;
    controllers.set(kind, (controllers.get(kind) ?? 0) + 1);
  }
  out.set(
    'controllers',
    [...controllers]
      .sort()
      .map(([kind, n]) => `${kind}×${n}`)
      .join(' '),
  );
  out.set('input', all(/<input [^>]*>/g).join(' ') || '(none)');
  out.set('features', /<features>([\s\S]*?)<\/features>/.exec(xml)?.[1]?.replace(/\s+/g, '') ?? '');
  out.set('sysinfo', all(/<smbios [^>]*>|<sysinfo [^>]*>/g).join(' ') || '(none)');
  for (const event of ['on_poweroff', 'on_reboot', 'on_crash']) {
    out.set(event, new RegExp(`<${event}>(\\w+)</${event}>`).exec(xml)?.[1] ?? '');
  }
  return out;
}

function printXmlDiff(ours: string, theirs: string): void {
  const a = salient(ours);
  const b = salient(theirs);
  console.log('\ndomain XML, kvm2 | virt-install (seed as a virtio disk)');
  for (const [key, value] of a) {
    const other = b.get(key) ?? '';
    console.log(
      `  ${key.padEnd(15)} ${value === other ? `same: ${value}` : `${value}\n${' '.repeat(18)}| ${other}`}`,
    );
  }
}

async function main(): Promise<void> {
  const image = await ensureCloudImage();
  console.log(`image: ${describeCloudImage(image)}`);
  fleet = await startQueueFleet('bg');
  fleet.images.serve('/debian-12.qcow2', { file: image.path });
  const sha256 = await fileSha256(image.path);
  const base = fleet.configObject();
  const configPath = fleet.writeConfig({
    images: {
      ...(base['images'] as Record<string, unknown>),
      debian: { url: fleet.images.url('/debian-12.qcow2'), sha256, format: 'qcow2' },
    },
    defaults: { vcpus: 1, memoryMiB: 512, diskGiB: 2, addressTimeout: '300s' },
    // The product's address poll (3 s), not the tests' settings for it.
    worker: { ...TEST_WORKER, addressPoll: '3s' },
  });
  const worker = await startWorkerProcess(configPath);
  observer = await LibvirtConnection.connect(parseLibvirtUri('qemu:///system'), {
    host: 'observer',
  });
  await subscribeLifecycle(observer, (e) => {
    if (e.event === EVENT_STARTED && !startedAt.has(e.dom.name))
      startedAt.set(e.dom.name, Date.now());
  });
  await subscribeAgentLifecycle(observer, (e) => {
    if (e.state === AgentLifecycleState.CONNECTED && !agentAt.has(e.dom.name)) {
      agentAt.set(e.dom.name, Date.now());
    }
  });
  const baseVolume = `kvm2-base-${sha256}.qcow2`;
  // virt-install keeps its cloud-init ISO in a pool `boot` it defines on first use, in a
  // directory it does not make: made here, and both removed afterwards when they were new.
  const hadBootPool = (await virsh(['pool-list', '--all', '--name'])).split('\n').includes('boot');
  fs.mkdirSync('/var/lib/libvirt/boot', { recursive: true });
  try {
    // The base image into the pool's cache (untimed): both sides start from it.
    const warm = await kvm2Round();
    console.log(
      `warm-up (fills the image cache): kvm2 address after ${(warm.t.address / 1000).toFixed(1)} s`,
    );
    const basePath = (await virsh(['vol-path', '--pool', 'default', baseVolume])).trim();
    if (args['skip-default-check'] !== true) await defaultCheck(basePath);

    const ours: Timings[] = [];
    const theirs: Timings[] = [];
    let xml = { ours: '', theirs: '' };
    for (let r = 0; r < ROUNDS; r++) {
      const order =
        r % 2 === 0 ? (['kvm2', 'virt-install'] as const) : (['virt-install', 'kvm2'] as const);
      for (const side of order) {
        const result = side === 'kvm2' ? await kvm2Round() : await virtInstallRound(basePath);
        (side === 'kvm2' ? ours : theirs).push(result.t);
        if (side === 'kvm2') xml = { ...xml, ours: result.xml };
        else xml = { ...xml, theirs: result.xml };
        console.log(
          `round ${r + 1} ${side.padEnd(12)} running ${(result.t.running / 1000).toFixed(1)} s, agent ${(result.t.agent / 1000).toFixed(1)} s, address ${(result.t.address / 1000).toFixed(1)} s`,
        );
      }
    }
    const med = (list: Timings[], key: keyof Timings): number => median(list.map((t) => t[key]));
    console.log(`\nmedians of ${ROUNDS} rounds (start → …)`);
    for (const key of ['running', 'agent', 'address'] as const) {
      const a = med(ours, key);
      const b = med(theirs, key);
      const target =
        key === 'address' ? `   (target <= 1.0x: ${a / b <= 1 ? 'met' : 'MISSED'})` : '';
      console.log(
        `  → ${key.padEnd(8)} kvm2 ${(a / 1000).toFixed(1).padStart(6)} s   virt-install ${(b / 1000).toFixed(1).padStart(6)} s   ratio ${(a / b).toFixed(2)}x${target}`,
      );
    }
    printXmlDiff(xml.ours, xml.theirs);
    // Whole, for reading beside the summary above.
    fs.mkdirSync('.cache', { recursive: true });
    fs.writeFileSync('.cache/bench-guest-kvm2.xml', xml.ours);
    fs.writeFileSync('.cache/bench-guest-virt-install.xml', xml.theirs);
    console.log('(whole: .cache/bench-guest-kvm2.xml, .cache/bench-guest-virt-install.xml)');
  } finally {
    await observer.close();
    await worker.stop();
    await fleet.cleanup();
    await virsh(['vol-delete', '--pool', 'default', baseVolume]).catch(() => undefined);
    await virsh(['vol-delete', '--pool', 'default', `${baseVolume}.sha256`]).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    if (!hadBootPool) {
      await virsh(['pool-destroy', 'boot']).catch(() => undefined);
      await virsh(['pool-undefine', 'boot']).catch(() => undefined);
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
