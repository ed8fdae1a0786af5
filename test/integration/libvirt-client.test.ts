// The libvirt client against the real libvirtd, through the UNIX socket and through real
// OpenSSH, with virsh as the independent witness of every step.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { LibvirtError } from '../../src/libvirt/errors.js';
import {
  ConnectGetHostname,
  ConnectGetLibVersion,
  ConnectListAllDomains,
  DomainCreateWithFlags,
  DomainDefineXMLFlags,
  DomainDestroyFlags,
  DomainGetMetadata,
  DomainGetState,
  DomainGetXMLDesc,
  DomainLookupByName,
  DomainSetMetadata,
  DomainUndefineFlags,
  StoragePoolLookupByName,
  StorageVolCreateXML,
  StorageVolDelete,
  StorageVolDownload,
  StorageVolGetPath,
  StorageVolUpload,
} from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { uefiDomainXml } from '../harness/domain-events.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh, virshFails } from '../harness/virsh.js';

const VIR_DOMAIN_RUNNING = 1;
const VIR_DOMAIN_SHUTOFF = 5;
const METADATA_ELEMENT = 2;
const AFFECT_CONFIG = 2;
const UNDEFINE_NVRAM = 4;
const KVM2_NS = 'https://kvm2.dev/xmlns/test/1';

/** VNC on loopback: the domain has a device libvirt must set up, as kvm2's do. */
const VNC = "<graphics type='vnc' autoport='yes' listen='127.0.0.1'/>";

let sshd: Sshd;
beforeAll(async () => {
  sshd = await startSshd();
});
afterAll(async () => {
  await sshd?.stop();
});

const transports = [
  { name: 'unix socket', uri: () => 'qemu:///system' },
  { name: 'ssh', uri: () => sshd.uri('/system') },
];

describe.each(transports)('libvirt client over $name', ({ uri }) => {
  let conn: LibvirtConnection;
  beforeAll(async () => {
    conn = await LibvirtConnection.connect(parseLibvirtUri(uri()), { host: 'test' });
  });
  afterAll(async () => {
    await conn?.close();
  });

  it('reports the library version and hostname virsh reports', async () => {
    const { libVer } = await conn.call(ConnectGetLibVersion, undefined);
    const { hostname } = await conn.call(ConnectGetHostname, undefined);
    const version = await virsh(['version']);
    const lib = /Using library: libvirt (\d+)\.(\d+)\.(\d+)/.exec(version);
    expect(lib).not.toBeNull();
    const [, major, minor, micro] = lib!.map(Number);
    expect(libVer).toBe(BigInt(major! * 1_000_000 + minor! * 1000 + micro!));
    expect(hostname).toBe((await virsh(['hostname'])).trim());
  });

  it('lists the same domains as virsh list --all --name', async () => {
    const name = uniqueName('kvm2-list');
    const { dom } = await conn.call(DomainDefineXMLFlags, {
      xml: uefiDomainXml(name, VNC),
      flags: 0,
    });
    try {
      const { domains } = await conn.call(ConnectListAllDomains, { needResults: 1, flags: 0 });
      const ours = domains.map((d) => d.name).sort();
      const theirs = (await virsh(['list', '--all', '--name']))
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean)
        .sort();
      expect(ours).toEqual(theirs);
      expect(ours).toContain(name);
    } finally {
      await conn.call(DomainUndefineFlags, { dom, flags: UNDEFINE_NVRAM });
    }
  });

  it('defines, starts, reads, tags, destroys and undefines a UEFI domain, seen by virsh', async () => {
    const name = uniqueName('kvm2-life');
    const { dom } = await conn.call(DomainDefineXMLFlags, {
      xml: uefiDomainXml(name, VNC),
      flags: 0,
    });
    try {
      expect(dom.name).toBe(name);
      expect(dom.id).toBe(-1);
      expect((await virsh(['domstate', name])).trim()).toBe('shut off');

      const started = await conn.call(DomainCreateWithFlags, { dom, flags: 0 });
      expect(started.dom.id).toBeGreaterThan(0);
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      const { state } = await conn.call(DomainGetState, { dom, flags: 0 });
      expect(state).toBe(VIR_DOMAIN_RUNNING);

      const { xml } = await conn.call(DomainGetXMLDesc, { dom, flags: 0 });
      expect(xml).toContain(`<name>${name}</name>`);
      expect(xml).toMatch(/<loader[^>]*type=['"]pflash['"]/);

      await conn.call(DomainSetMetadata, {
        dom,
        type: METADATA_ELEMENT,
        metadata: '<instance uid="u-1"/>',
        key: 'kvm2',
        uri: KVM2_NS,
        flags: AFFECT_CONFIG,
      });
      const seen = await virsh(['metadata', name, '--uri', KVM2_NS, '--config']);
      expect(seen).toContain('uid="u-1"');
      const { metadata } = await conn.call(DomainGetMetadata, {
        dom,
        type: METADATA_ELEMENT,
        uri: KVM2_NS,
        flags: AFFECT_CONFIG,
      });
      expect(metadata).toContain('uid="u-1"');

      await conn.call(DomainDestroyFlags, { dom, flags: 0 });
      expect((await virsh(['domstate', name])).trim()).toBe('shut off');
      expect((await conn.call(DomainGetState, { dom, flags: 0 })).state).toBe(VIR_DOMAIN_SHUTOFF);
    } finally {
      await conn.call(DomainUndefineFlags, { dom, flags: UNDEFINE_NVRAM }).catch(() => undefined);
    }
    expect(await virshFails(['dominfo', name])).toMatch(/failed to get domain/i);
  });

  it('uploads a volume whose bytes on disk have the sha256 of what was sent, and downloads it back', async () => {
    const name = `${uniqueName('kvm2-up')}.raw`;
    const size = 3 * 1024 * 1024 + 12345; // several 262120-byte chunks and a ragged tail
    const data = crypto.randomBytes(size);
    const { pool } = await conn.call(StoragePoolLookupByName, { name: 'default' });
    const { vol } = await conn.call(StorageVolCreateXML, {
      pool,
      xml: `<volume><name>${name}</name><capacity unit='bytes'>${size}</capacity><target><format type='raw'/></target></volume>`,
      flags: 0,
    });
    try {
      const chunks = Array.from({ length: Math.ceil(size / 1_000_000) }, (_, i) =>
        data.subarray(i * 1_000_000, (i + 1) * 1_000_000),
      );
      await conn.upload(
        StorageVolUpload,
        { vol, offset: 0n, length: BigInt(size), flags: 0 },
        Readable.from(chunks),
      );
      const { name: volPath } = await conn.call(StorageVolGetPath, { vol });
      expect((await virsh(['vol-path', '--pool', 'default', name])).trim()).toBe(volPath);
      const onDisk = crypto.createHash('sha256').update(fs.readFileSync(volPath)).digest('hex');
      expect(onDisk).toBe(crypto.createHash('sha256').update(data).digest('hex'));

      const parts: Buffer[] = [];
      for await (const chunk of conn.download(StorageVolDownload, {
        vol,
        offset: 0n,
        length: 0n,
        flags: 0,
      })) {
        parts.push(chunk);
      }
      expect(Buffer.concat(parts).equals(data)).toBe(true);

      // A length the daemon honours, over more than one of its packets: those bytes exactly,
      // and the link stays (more than asked would fail the download: test/unit/rpc-client).
      const slice: Buffer[] = [];
      for await (const chunk of conn.download(StorageVolDownload, {
        vol,
        offset: 1000n,
        length: 300_000n,
        flags: 0,
      })) {
        slice.push(chunk);
      }
      expect(Buffer.concat(slice).equals(data.subarray(1000, 301_000))).toBe(true);
      expect(conn.isDown).toBe(false);
    } finally {
      await conn.call(StorageVolDelete, { vol, flags: 0 });
    }
    expect(await virshFails(['vol-info', '--pool', 'default', name])).toMatch(
      /Storage volume not found/i,
    );
  });

  it("gives libvirt's no-domain code for a missing domain", async () => {
    const err = await conn
      .call(DomainLookupByName, { name: uniqueName('kvm2-missing') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err).toMatchObject({
      libvirtCode: 42,
      kind: 'not_found',
      procedure: 'DomainLookupByName',
    });
    expect((err as Error).message).toMatch(/no domain with matching name/);
  });

  it('keeps many calls in flight and matches every reply to its call', async () => {
    const names = Array.from({ length: 50 }, (_, i) => `kvm2-nosuch-${i}`);
    const results = await Promise.all(
      names.map((name) =>
        conn.call(DomainLookupByName, { name }).catch((e: LibvirtError) => e.message),
      ),
    );
    results.forEach((msg, i) => expect(msg).toContain(`'${names[i]}'`));
  });
});
