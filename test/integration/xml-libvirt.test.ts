// The XML builders proved by libvirt itself: volumes created from buildVolumeXml, domains
// defined from buildDomainXml with schema validation, read back with `virsh dumpxml`, started
// (UEFI under TCG, as HOST-SETUP.md says these machines need), and the metadata read back with
// `virsh metadata`. Everything is named kvm2-xmltest-… and removed afterwards, even on failure.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDomainXml } from '../../src/provider/xml/domain.js';
import { KVM2_XMLNS, buildMetadata, parseMetadata } from '../../src/provider/xml/metadata.js';
import type { DomainSpec, InstanceMetadata } from '../../src/provider/xml/types.js';
import {
  buildVolumeXml,
  parseDomainDisks,
  parseVolumeBacking,
} from '../../src/provider/xml/volume.js';
import { uniqueName, virsh, virshFails } from '../harness/virsh.js';
import { DEFAULT_SERIAL_LOG_DIR } from '../../src/provider/config/schema.js';
import { serialLogFile } from '../../src/provider/core/ids.js';
import { parseCreateRequest } from '../../src/provider/core/request.js';

const prefix = uniqueName('kvm2-xmltest');
const pool = 'default';
const networkName = `${prefix}-net`;
// Linux interface names stop at 15 bytes.
const bridgeName = `kvm2xt${Math.random().toString(36).slice(2, 8)}`;
const uefiName = `${prefix}-uefi`;
const biosName = `${prefix}-bios`;
const vcpusName = `${prefix}-vcpus`;
const volumes = {
  base: `${prefix}-base.qcow2`,
  uefiOverlay: `${prefix}-uefi.qcow2`,
  biosOverlay: `${prefix}-bios.qcow2`,
  seed: `${prefix}-seed.iso`,
};
const serialLog = (name: string): string => serialLogFile(DEFAULT_SERIAL_LOG_DIR, name);

const metadata: InstanceMetadata = {
  uid: `uid-<&>"'-${prefix}`,
  createdAt: new Date().toISOString(),
  tag: 'tag ]]> é😀 & <b>',
  image: 'debian-12 "bookworm"',
};

// libvirt's XML read by a parser that is not ours.
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  parseAttributeValue: false,
  isArray: (name) =>
    ['disk', 'feature', 'channel', 'serial', 'console', 'interface', 'panic'].includes(name),
});
type Node = Record<string, unknown>;

function child(node: unknown, name: string): Node {
  const value = (node as Node | undefined)?.[name];
  if (typeof value !== 'object' || value === null) throw new Error(`no <${name}>`);
  return value as Node;
}

function list(node: unknown, name: string): Node[] {
  const value = (node as Node)[name];
  return Array.isArray(value) ? (value as Node[]) : [];
}

const text = (node: unknown): unknown =>
  typeof node === 'object' && node !== null ? (node as Node)['#text'] : node;

let workDir = '';
const paths: Record<keyof typeof volumes, string> = {
  base: '',
  uefiOverlay: '',
  biosOverlay: '',
  seed: '',
};

async function createVolume(name: string, xml: string): Promise<string> {
  const file = path.join(workDir, `${name}.xml`);
  await fs.writeFile(file, xml);
  await virsh(['vol-create', pool, file]);
  return (await virsh(['vol-path', '--pool', pool, name])).trim();
}

async function define(spec: DomainSpec): Promise<void> {
  const file = path.join(workDir, `${spec.name}.xml`);
  await fs.writeFile(file, buildDomainXml(spec));
  await virsh(['define', '--validate', file]);
}

async function domainXml(name: string, inactive = false): Promise<Node> {
  const xml = await virsh(['dumpxml', ...(inactive ? ['--inactive'] : []), name]);
  return child(parser.parse(xml), 'domain');
}

async function waitRunning(name: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const state = (await virsh(['domstate', name])).trim();
    if (state === 'running') return;
    if (Date.now() > deadline) throw new Error(`${name} is ${state}, not running`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function specFor(name: string, overrides: Partial<DomainSpec>): DomainSpec {
  return {
    name,
    vcpus: 1,
    memoryMiB: 128,
    domainType: 'qemu',
    firmware: 'uefi',
    overlayPath: paths.uefiOverlay,
    seedPath: paths.seed,
    network: { network: networkName },
    serialLogPath: serialLog(name),
    metadata,
    ...overrides,
  };
}

beforeAll(async () => {
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kvm2-xmltest-'));
  // An isolated network: a bridge only, no forward, no address, no dnsmasq (HOST-SETUP.md).
  const networkFile = path.join(workDir, 'network.xml');
  await fs.writeFile(
    networkFile,
    `<network><name>${networkName}</name><bridge name='${bridgeName}'/><dns enable='no'/></network>`,
  );
  await virsh(['net-define', networkFile]);
  await virsh(['net-start', networkName]);

  paths.base = await createVolume(
    volumes.base,
    buildVolumeXml({ name: volumes.base, capacityBytes: 64n << 20n, format: 'qcow2' }),
  );
  for (const key of ['uefiOverlay', 'biosOverlay'] as const) {
    paths[key] = await createVolume(
      volumes[key],
      buildVolumeXml({
        name: volumes[key],
        capacityBytes: 128 << 20,
        format: 'qcow2',
        backingStore: { path: paths.base, format: 'qcow2' },
      }),
    );
  }
  paths.seed = await createVolume(
    volumes.seed,
    buildVolumeXml({ name: volumes.seed, capacityBytes: 1 << 20, format: 'raw' }),
  );
});

afterAll(async () => {
  const attempt = async (run: () => Promise<unknown>): Promise<void> => {
    try {
      await run();
    } catch {
      // Already gone, or never made: cleanup carries on with the rest.
    }
  };
  for (const name of [uefiName, biosName, vcpusName]) {
    await attempt(() => virsh(['destroy', name]));
    await attempt(() => virsh(['undefine', '--nvram', name]));
    await attempt(() => fs.rm(serialLog(name), { force: true }));
    await attempt(() => fs.rm(`${DEFAULT_SERIAL_LOG_DIR}/${name}.log`, { force: true }));
  }
  for (const name of [volumes.uefiOverlay, volumes.biosOverlay, volumes.seed, volumes.base]) {
    await attempt(() => virsh(['vol-delete', '--pool', pool, name]));
  }
  await attempt(() => virsh(['net-destroy', networkName]));
  await attempt(() => virsh(['net-undefine', networkName]));
  if (workDir !== '') await fs.rm(workDir, { recursive: true, force: true });
});

describe('volume XML on libvirt', () => {
  it('creates sparse volumes and a qcow2 overlay on its backing store', async () => {
    const overlay = await virsh(['vol-dumpxml', '--pool', pool, volumes.uefiOverlay]);
    expect(parseVolumeBacking(overlay)).toEqual({ path: paths.base, format: 'qcow2' });
    const target = child(child(parser.parse(overlay), 'volume'), 'target');
    expect(child(target, 'format')['@_type']).toBe('qcow2');
    expect(parseVolumeBacking(await virsh(['vol-dumpxml', '--pool', pool, volumes.seed]))).toBe(
      null,
    );
    const seed = child(
      parser.parse(await virsh(['vol-dumpxml', '--pool', pool, volumes.seed])),
      'volume',
    );
    expect(text(child(seed, 'capacity'))).toBe(String(1 << 20));
    expect(child(child(seed, 'target'), 'format')['@_type']).toBe('raw');
  });
});

describe('UEFI domain XML on libvirt', () => {
  it('is accepted by define --validate and reads back as built', async () => {
    await define(specFor(uefiName, { mac: '52:54:00:6b:76:32' }));
    const domain = await domainXml(uefiName, true);
    expect(domain['@_type']).toBe('qemu');
    const os = child(domain, 'os');
    // libvirt 9.0 keeps the request as written until start: no loader in the inactive XML.
    expect(os['@_firmware']).toBe('efi');
    expect(child(os, 'type')['@_machine']).toMatch(/q35/);
    expect(os['loader']).toBeUndefined();
    const features = Object.fromEntries(
      list(child(os, 'firmware'), 'feature').map((f) => [String(f['@_name']), f['@_enabled']]),
    );
    expect(features).toEqual({ 'secure-boot': 'no', 'enrolled-keys': 'no' });
    expect(Object.keys(child(domain, 'features'))).toEqual(
      expect.arrayContaining(['acpi', 'apic']),
    );

    const devices = child(domain, 'devices');
    const [vda, vdb] = list(devices, 'disk');
    expect(vda).toMatchObject({
      '@_type': 'file',
      '@_device': 'disk',
      source: { '@_file': paths.uefiOverlay },
      target: { '@_dev': 'vda', '@_bus': 'virtio' },
      driver: { '@_type': 'qcow2' },
    });
    expect(vdb).toMatchObject({
      '@_type': 'file',
      '@_device': 'disk',
      source: { '@_file': paths.seed },
      target: { '@_dev': 'vdb', '@_bus': 'virtio' },
      driver: { '@_type': 'raw' },
      readonly: '',
    });
    expect(list(devices, 'interface')).toEqual([
      expect.objectContaining({
        '@_type': 'network',
        source: { '@_network': networkName },
        mac: { '@_address': '52:54:00:6b:76:32' },
        model: { '@_type': 'virtio' },
      }),
    ]);
    expect(list(devices, 'channel')).toEqual([
      expect.objectContaining({
        '@_type': 'unix',
        target: { '@_type': 'virtio', '@_name': 'org.qemu.guest_agent.0' },
      }),
    ]);
    expect(list(devices, 'serial')).toEqual([
      expect.objectContaining({
        '@_type': 'pty',
        log: { '@_file': serialLog(uefiName), '@_append': 'off' },
      }),
    ]);
    expect(list(devices, 'console')).toEqual([expect.objectContaining({ '@_type': 'pty' })]);
    // Without a pvpanic device qemu never reports a guest's panic: on_crash would never act,
    // and a panicked guest would stay 'running'.
    expect(list(devices, 'panic')).toEqual([expect.objectContaining({ '@_model': 'isa' })]);

    // Our own readers agree with libvirt's output.
    const xml = await virsh(['dumpxml', '--inactive', uefiName]);
    expect(parseMetadata(xml)).toEqual(metadata);
    expect(
      parseDomainDisks(xml).map(({ type, sourceFile, readonly, target }) => ({
        type,
        sourceFile,
        readonly,
        target,
      })),
    ).toEqual([
      { type: 'file', sourceFile: paths.uefiOverlay, readonly: false, target: 'vda' },
      { type: 'file', sourceFile: paths.seed, readonly: true, target: 'vdb' },
    ]);
  });

  it('gives our element back from virsh metadata, and takes buildMetadata output', async () => {
    const element = await virsh(['metadata', uefiName, '--uri', KVM2_XMLNS]);
    expect(parseMetadata(element)).toEqual(metadata);

    const updated = { ...metadata, tag: 'retagged <&>' };
    const set = ['metadata', uefiName, '--uri', KVM2_XMLNS, '--key', 'kvm2', '--config'];
    await virsh([...set, '--set', buildMetadata(updated)]);
    expect(parseMetadata(await virsh(['metadata', uefiName, '--uri', KVM2_XMLNS]))).toEqual(
      updated,
    );
    expect(parseMetadata(await virsh(['dumpxml', '--inactive', uefiName]))).toEqual(updated);
    // Why buildMetadata's default form has no namespace: libvirt adds it, and refuses an
    // element that already declares the key's prefix.
    const refused = await virshFails([
      ...set,
      '--set',
      buildMetadata(metadata, { namespaced: true }),
    ]);
    expect(refused).toMatch(/namespace/);
    await virsh([...set, '--set', buildMetadata(metadata)]);
  });

  it('starts under TCG with the OVMF build without secure boot', async () => {
    await virsh(['start', uefiName]);
    try {
      await waitRunning(uefiName);
      const domain = await domainXml(uefiName);
      const os = child(domain, 'os');
      const loader = child(os, 'loader');
      expect(text(loader)).toMatch(/OVMF_CODE/);
      expect(text(loader)).not.toMatch(/secboot|\.ms\./);
      expect(loader['@_type']).toBe('pflash');
      expect(['no', undefined]).toContain(loader['@_secure']);
      const nvram = child(os, 'nvram');
      expect(text(nvram)).toMatch(new RegExp(`/${uefiName}_VARS\\.fd$`));
      expect(nvram['@_template']).not.toMatch(/\.ms\.|secboot/);
      // virtlogd made the serial log at start.
      await expect(fs.stat(serialLog(uefiName))).resolves.toBeTruthy();
      // qemu runs with the panic device the guest's pvpanic driver writes to.
      expect(list(child(domain, 'devices'), 'panic')).toEqual([{ '@_model': 'isa' }]);
      const pid = (await fs.readFile(`/run/libvirt/qemu/${uefiName}.pid`, 'utf8')).trim();
      const cmdline = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
      expect(cmdline.filter((arg) => arg.includes('pvpanic'))).not.toEqual([]);
      expect(parseMetadata(await virsh(['dumpxml', uefiName]))).toEqual(metadata);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await virsh(['domstate', uefiName])).trim()).toBe('running');
    } finally {
      await virsh(['destroy', uefiName]);
    }
  });
});

describe('the most vCPUs a create may ask for', () => {
  // libvirt's qemu driver refuses more than 255 vCPUs on x86 without an IOMMU in extended
  // interrupt mode (QEMU_MAX_VCPUS_WITHOUT_EIM), which kvm2's XML does not have: a larger
  // request would pass validation, fill the image and write the disks, then fail at define.
  const request = {
    host: 'h1',
    name: 'web-1',
    uid: '0b7e6f7c-3c1a-4d2e-9f00-5a6b7c8d9e0f',
    image: 'debian-12',
  };

  it('is one libvirt defines, and one more is refused at validation naming the field', async () => {
    const largest = parseCreateRequest({ ...request, vcpus: 255 }).vcpus ?? 0;
    expect(largest).toBe(255);
    expect(() => parseCreateRequest({ ...request, vcpus: largest + 1 })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_REQUEST',
        message: expect.stringContaining('request.vcpus: must be at most 255') as unknown,
      }),
    );
    const file = path.join(workDir, `${vcpusName}.xml`);
    await fs.writeFile(file, buildDomainXml(specFor(vcpusName, { vcpus: largest + 1 })));
    expect(await virshFails(['define', '--validate', file])).toMatch(/more than 255 vCPUs/);
    await define(specFor(vcpusName, { vcpus: largest }));
    expect(await virsh(['vcpucount', '--maximum', '--config', vcpusName])).toMatch(/^255\s*$/);
  });
});

describe('BIOS domain XML on libvirt', () => {
  it('has no UEFI loader, and runs with its NIC on a bridge', async () => {
    await define(
      specFor(biosName, {
        firmware: 'bios',
        overlayPath: paths.biosOverlay,
        network: { bridge: bridgeName },
      }),
    );
    const inactive = await domainXml(biosName, true);
    const os = child(inactive, 'os');
    expect(os['@_firmware']).toBeUndefined();
    expect(os['firmware']).toBeUndefined();
    expect(os['loader']).toBeUndefined();
    expect(list(child(inactive, 'devices'), 'interface')).toEqual([
      expect.objectContaining({ '@_type': 'bridge', source: { '@_bridge': bridgeName } }),
    ]);

    await virsh(['start', biosName]);
    try {
      await waitRunning(biosName);
      const live = child(await domainXml(biosName), 'os');
      expect(live['loader']).toBeUndefined();
      expect(live['nvram']).toBeUndefined();
    } finally {
      await virsh(['destroy', biosName]);
    }
  });
});
