// A real guest, end to end, on the local libvirtd: kvm2's test guest image (docs/guest-image.md)
// as a base volume, a qcow2 overlay on it, a seed from buildSeed with a static address in
// network-config, a domain from buildDomainXml (UEFI under TCG, as HOST-SETUP.md says these
// machines need) on an isolated network (a bridge only: no forward, no host address, no
// dnsmasq), started. The guest proves it read our seed: the guest agent reports the seed's
// address and hostname, and the serial log shows the seed's instance-id and hostname.
// Everything is named kvm2-guesttest-… / kvm2-gt-… and removed afterwards, even on failure.
import { randomUUID } from 'node:crypto';
import { readFile, rm, stat, writeFile, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeed } from '../../src/provider/seed/seed.js';
import { buildDomainXml } from '../../src/provider/xml/domain.js';
import { ensureGuestImage, type GuestImage } from '../harness/guest-image.js';
import { uniqueName, virsh } from '../harness/virsh.js';
import { DEFAULT_SERIAL_LOG_DIR } from '../../src/provider/config/schema.js';
import { serialLogFile } from '../../src/provider/core/ids.js';

const pool = 'default';
const rand = Math.random().toString(36).slice(2, 8);
const domainName = uniqueName('kvm2-guesttest');
const hostname = `gt-${rand}`;
const uid = randomUUID();
const networkName = `kvm2-gt-${rand}`;
// Linux interface names stop at 15 bytes.
const bridgeName = `kvgt${rand}`;
const volumes = {
  base: `kvm2-guesttest-base-${rand}.qcow2`,
  overlay: `${domainName}.qcow2`,
  seed: `${domainName}-seed.iso`,
};
const serialLogPath = serialLogFile(DEFAULT_SERIAL_LOG_DIR, domainName);
// Documentation range (RFC 5737): the NIC sits on an isolated bridge, so nothing is routed.
const address = `192.0.2.${10 + Math.floor(Math.random() * 240)}`;
const mac = `52:54:00:${[0, 0, 0]
  .map(() =>
    Math.floor(Math.random() * 256)
      .toString(16)
      .padStart(2, '0'),
  )
  .join(':')}`;
const networkConfig = [
  'version: 2',
  'ethernets:',
  '  eth0:',
  '    match:',
  `      macaddress: "${mac}"`,
  '    addresses:',
  `      - ${address}/24`,
  '',
].join('\n');

const BOOT_BUDGET_MS = 120_000;

let workDir = '';
let image: GuestImage | undefined;
const created = { network: false, domain: false, volumes: [] as string[] };

function say(line: string): void {
  process.stdout.write(`[guest-boot] ${line}\n`);
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

async function volumePath(name: string): Promise<string> {
  return (await virsh(['vol-path', '--pool', pool, name])).trim();
}

/** A raw volume of exactly the file's size, filled with vol-upload (libvirt's stream upload). */
async function uploadVolume(name: string, file: string): Promise<string> {
  const { size } = await stat(file);
  await virsh(['vol-create-as', pool, name, `${size}b`, '--format', 'raw']);
  created.volumes.push(name);
  await virsh(['vol-upload', '--pool', pool, name, file]);
  return volumePath(name);
}

/** `virsh domifaddr --source agent` as rows of interface, MAC, protocol, address/prefix. */
async function agentAddresses(): Promise<string[][]> {
  const out = await virsh(['domifaddr', domainName, '--source', 'agent']);
  // Continuation rows (a second address on the same interface) start with `-`.
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols.length >= 4);
}

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-guesttest-'));
  image = await ensureGuestImage();
  say(
    `guest image ${image.path} (${(image.sizeBytes / 2 ** 20).toFixed(1)} MiB, kernel ` +
      `${image.kernel}): build time ${seconds(image.buildMs)}` +
      (image.cached ? `, cached (lookup ${seconds(image.waitedMs)})` : ', built now'),
  );

  // The image as a base volume (libvirt probes its qcow2 format on refresh), an overlay on it.
  const basePath = await uploadVolume(volumes.base, image.path);
  await virsh(['pool-refresh', pool]);
  await virsh([
    'vol-create-as',
    pool,
    volumes.overlay,
    '256M',
    '--format',
    'qcow2',
    '--backing-vol',
    basePath,
    '--backing-vol-format',
    'qcow2',
  ]);
  created.volumes.push(volumes.overlay);

  const seedFile = path.join(workDir, 'seed.iso');
  await writeFile(
    seedFile,
    buildSeed({ uid, name: hostname, userData: '#cloud-config\n', networkConfig }),
  );
  const seedPath = await uploadVolume(volumes.seed, seedFile);

  // An isolated network: a bridge only, no forward, no address, no dnsmasq (HOST-SETUP.md).
  const networkFile = path.join(workDir, 'network.xml');
  await writeFile(
    networkFile,
    `<network><name>${networkName}</name><bridge name='${bridgeName}'/><dns enable='no'/></network>`,
  );
  await virsh(['net-define', networkFile]);
  created.network = true;
  await virsh(['net-start', networkName]);

  const domainFile = path.join(workDir, 'domain.xml');
  await writeFile(
    domainFile,
    buildDomainXml({
      name: domainName,
      vcpus: 1,
      memoryMiB: 256,
      domainType: 'qemu',
      firmware: 'uefi',
      overlayPath: await volumePath(volumes.overlay),
      seedPath,
      network: { network: networkName },
      mac,
      serialLogPath,
      metadata: {
        uid,
        createdAt: new Date().toISOString(),
        tag: 'kvm2-guesttest',
        image: `kvm2-test-guest:${image.key}`,
      },
    }),
  );
  await virsh(['define', '--validate', domainFile]);
  created.domain = true;
}, 6 * 60_000);

afterAll(async () => {
  const attempt = async (run: () => Promise<unknown>): Promise<void> => {
    try {
      await run();
    } catch {
      // Already gone, or never made: cleanup carries on with the rest.
    }
  };
  if (created.domain) {
    await attempt(() => virsh(['destroy', domainName]));
    await attempt(() => virsh(['undefine', '--nvram', domainName]));
  }
  await attempt(() => rm(serialLogPath, { force: true }));
  await attempt(() => rm(`${DEFAULT_SERIAL_LOG_DIR}/${domainName}.log`, { force: true }));
  // Overlay before base: libvirt does not mind, but a reader of the pool might.
  for (const name of [...created.volumes].reverse()) {
    await attempt(() => virsh(['vol-delete', '--pool', pool, name]));
  }
  if (created.network) {
    await attempt(() => virsh(['net-destroy', networkName]));
    await attempt(() => virsh(['net-undefine', networkName]));
  }
  if (workDir !== '') await rm(workDir, { recursive: true, force: true });
}, 60_000);

describe('the test guest on libvirt', () => {
  it(
    'boots from the overlay, reads the seed and reports its address through the agent',
    async () => {
      const started = Date.now();
      await virsh(['start', domainName]);
      const deadline = started + BOOT_BUDGET_MS;
      let rows: string[][] = [];
      let lastError = '';
      for (;;) {
        try {
          rows = await agentAddresses();
          if (rows.some((cols) => cols[3] === `${address}/24`)) break;
          lastError = `agent answered without ${address}: ${JSON.stringify(rows)}`;
        } catch (err) {
          // "Guest agent is not responding" until qemu-ga opens its port.
          lastError = String((err as { stderr?: string }).stderr ?? err).trim();
        }
        if (Date.now() > deadline) {
          const log = await readFile(serialLogPath, 'utf8').catch(() => '(no serial log)');
          throw new Error(
            `no ${address} from the guest agent within ${seconds(BOOT_BUDGET_MS)} ` +
              `(last: ${lastError}); serial log:\n${log.slice(-4000)}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const bootToAddressMs = Date.now() - started;
      say(`boot to address through the agent: ${seconds(bootToAddressMs)}`);

      const nic = rows.find((cols) => cols[3] === `${address}/24`) ?? [];
      expect(nic[1]).toBe(mac);
      expect(nic[2]).toBe('ipv4');
      // The agent answers for the guest: the hostname it reports is the seed's.
      expect((await virsh(['domhostname', domainName, '--source', 'agent'])).trim()).toBe(hostname);

      // The serial log (virtlogd writes it as the guest prints) shows what the init read.
      const log = await readFile(serialLogPath, 'utf8');
      const lines = log.split(/\r?\n/).filter((line) => line.startsWith('kvm2-guest: '));
      expect(lines).toContain(`kvm2-guest: instance-id=${uid}`);
      expect(lines).toContain(`kvm2-guest: hostname=${hostname}`);
      expect(lines).toContain(`kvm2-guest: address=${address}/24 interface=eth0`);
      expect(lines).toContain('kvm2-guest: seed=/dev/vdb');
      expect(lines).toContain('kvm2-guest: ready');
      say(`serial log: ${lines.length} kvm2-guest lines, e.g. ${lines.slice(0, 4).join(' | ')}`);
    },
    BOOT_BUDGET_MS + 60_000,
  );
});
