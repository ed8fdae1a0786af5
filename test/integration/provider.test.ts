// The provider contract against the real libvirtd through the harness's sshd, images from a
// real HTTP server on port 0, virsh as the independent witness.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { DEFAULT_SERIAL_LOG_DIR } from '../../src/provider/config/schema.js';
import { newUid, serialLogFile } from '../../src/provider/core/ids.js';
import { Provider } from '../../src/provider/provider.js';
import { KVM2_XMLNS } from '../../src/provider/xml/metadata.js';
import { startImageServer, type ImageServer } from '../harness/image-server.js';
import {
  domainExists,
  isolatedNetwork,
  poolVolumes,
  type TestNetwork,
} from '../harness/libvirt-objects.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh, virshFails } from '../harness/virsh.js';
import { testHost } from '../harness/test-host.js';
import { memoryLogger, memoryTracing } from '../harness/telemetry.js';

const run = promisify(execFile);
const SENTINEL = 'kvm2-secret-sentinel-7f3a9c';

let sshd: Sshd;
let images: ImageServer;
let net: TestNetwork;
let dir: string;
let provider: Provider;
const { exporter, tracerProvider } = memoryTracing('test');
const { logger, lines: logLines } = memoryLogger('debug');
const names: string[] = [];
const imageTag = uniqueName('img').replace(/[^a-z0-9-]/g, '');

function instanceName(): string {
  const n = uniqueName('kvm2-pv')
    .replace(/[^a-z0-9-]/g, '')
    .slice(0, 40);
  names.push(n);
  return n;
}

let basesBefore: string[] = [];

beforeAll(async () => {
  basesBefore = (await poolVolumes()).filter((v) => v.startsWith('kvm2-base-'));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-provider-'));
  const image = path.join(dir, 'tiny.qcow2');
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', image, '64M']);
  sshd = await startSshd();
  images = await startImageServer();
  images.serve('/tiny.qcow2', { file: image });
  net = await isolatedNetwork('kvm2-pvnet');
  const config = parseConfig({
    hosts: [testHost(sshd, net.name)],
    images: { [imageTag]: { url: images.url('/tiny.qcow2'), format: 'qcow2' } },
    defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
  });
  provider = new Provider(config, { logger, tracer: tracerProvider.getTracer('test') });
}, 60_000);

afterAll(async () => {
  await Promise.all(names.map((n) => provider?.delete(`h1/${n}`).catch(() => undefined)));
  await provider?.close();
  // The base images (and markers) this run's images filled: the cache keeps them otherwise.
  for (const v of await poolVolumes()) {
    if (v.startsWith('kvm2-base-') && !basesBefore.includes(v)) {
      await virsh(['vol-delete', '--pool', 'default', v]).catch(() => undefined);
    }
  }
  await net?.remove();
  await images?.close();
  await sshd?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
  context.disable();
});

describe('create, get, delete', () => {
  it('creates a running instance: overlay backed by the base, seed read-only, metadata', async () => {
    const name = instanceName();
    const uid = newUid();
    const before = await poolVolumes();
    const inst = await provider.create({
      host: 'h1',
      name,
      uid,
      image: imageTag,
      tag: 'pv-test',
      userData: `#cloud-config\n# ${SENTINEL}\n`,
    });
    expect(inst).toMatchObject({
      id: `h1/${name}`,
      host: 'h1',
      name,
      uid,
      tag: 'pv-test',
      image: imageTag,
    });
    expect(['running', 'provisioning']).toContain(inst.state);
    expect((await virsh(['domstate', name])).trim()).toBe('running');

    const overlay = await virsh(['vol-dumpxml', '--pool', 'default', `kvm2-${name}.qcow2`]);
    const basePath = /<backingStore>\s*<path>([^<]+)<\/path>/.exec(overlay)?.[1];
    expect(basePath).toMatch(/\/kvm2-base-[0-9a-f]{64}\./);
    expect(overlay).toMatch(/<format type='qcow2'\/>/);

    const xml = await virsh(['dumpxml', name]);
    const seedPath = (
      await virsh(['vol-path', '--pool', 'default', `kvm2-${name}-seed.iso`])
    ).trim();
    const seedDisk = new RegExp(
      `<disk type='file' device='disk'>(?:(?!</disk>)[\\s\\S])*<source file='${seedPath}'(?:(?!</disk>)[\\s\\S])*<readonly/>`,
    );
    expect(xml).toMatch(seedDisk);
    const meta = await virsh(['metadata', name, '--uri', KVM2_XMLNS]);
    expect(meta).toContain(`uid="${uid}"`);
    // The serial console's file, by default in libvirt's qemu log directory, made at start.
    const serialLog = serialLogFile(DEFAULT_SERIAL_LOG_DIR, name);
    expect(xml).toContain(`<log file='${serialLog}' append='off'/>`);
    expect(fs.statSync(serialLog).isFile()).toBe(true);

    const after = await poolVolumes();
    const added = after.filter((v) => !before.includes(v));
    expect(added).toEqual(expect.arrayContaining([`kvm2-${name}-seed.iso`, `kvm2-${name}.qcow2`]));

    // get: identity read back from libvirt's metadata
    const got = await provider.get(`h1/${name}`);
    expect(got).toMatchObject({ uid, createdAt: inst.createdAt, tag: 'pv-test', image: imageTag });
    expect(Date.parse(got.createdAt)).toBeGreaterThan(Date.now() - 120_000);

    // a repeat create with the same uid changes nothing: same domain, same files (inode and
    // modification time: a volume deleted and made again would differ)
    const uuidBefore = (await virsh(['domuuid', name])).trim();
    const overlayPath = (
      await virsh(['vol-path', '--pool', 'default', `kvm2-${name}.qcow2`])
    ).trim();
    const fileState = (p: string): string => {
      const st = fs.statSync(p);
      return `${st.ino}:${st.mtimeMs}`;
    };
    const filesBefore = [fileState(overlayPath), fileState(seedPath)];
    const again = await provider.create({ host: 'h1', name, uid, image: imageTag, tag: 'pv-test' });
    expect(again.uid).toBe(uid);
    expect(again.createdAt).toBe(inst.createdAt);
    expect((await virsh(['domuuid', name])).trim()).toBe(uuidBefore);
    expect([fileState(overlayPath), fileState(seedPath)]).toEqual(filesBefore);
    expect(await poolVolumes()).toEqual(after);

    // another uid is refused, and the instance is untouched
    await expect(
      provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
    ).rejects.toMatchObject({ code: 'ERR_UID_CONFLICT', kind: 'permanent' });
    expect((await virsh(['domuuid', name])).trim()).toBe(uuidBefore);

    // delete: no domain, no overlay or seed; the base stays; delete again succeeds
    await provider.delete(`h1/${name}`);
    expect(await domainExists(name)).toBe(false);
    const gone = await poolVolumes();
    expect(gone).not.toContain(`kvm2-${name}.qcow2`);
    expect(gone).not.toContain(`kvm2-${name}-seed.iso`);
    expect(gone).toContain(path.basename(basePath!));
    await provider.delete(`h1/${name}`);
    await expect(provider.get(`h1/${name}`)).rejects.toMatchObject({ kind: 'not_found' });
  }, 90_000);

  it('refuses a foreign domain of the same name in create and delete, and leaves it untouched', async () => {
    const name = instanceName();
    const file = path.join(dir, `${name}.xml`);
    fs.writeFileSync(
      file,
      `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory><os><type arch='x86_64'>hvm</type></os></domain>`,
    );
    await virsh(['define', file]);
    try {
      const uuid = (await virsh(['domuuid', name])).trim();
      await expect(
        provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
      ).rejects.toMatchObject({ code: 'ERR_FOREIGN_DOMAIN', kind: 'permanent' });
      await expect(provider.delete(`h1/${name}`)).rejects.toMatchObject({
        code: 'ERR_FOREIGN_DOMAIN',
        kind: 'permanent',
      });
      await expect(provider.get(`h1/${name}`)).rejects.toMatchObject({
        code: 'ERR_FOREIGN_DOMAIN',
      });
      expect((await virsh(['domuuid', name])).trim()).toBe(uuid);
      expect(await poolVolumes()).not.toContain(`kvm2-${name}.qcow2`);
    } finally {
      await virsh(['undefine', name]).catch(() => undefined);
    }
  });

  it('rejects bad requests with the field named and nothing made', async () => {
    const before = await poolVolumes();
    await expect(
      provider.create({ host: 'h1', name: 'Bad_Name', uid: newUid(), image: imageTag }),
    ).rejects.toThrow(/request\.name: must be a DNS label/);
    await expect(
      provider.create({ host: 'h1', name: 'ok-name', uid: 'not-a-uid', image: imageTag }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_REQUEST', kind: 'permanent' });
    await expect(
      provider.create({ host: 'nope', name: 'ok-name', uid: newUid(), image: imageTag }),
    ).rejects.toMatchObject({ code: 'ERR_UNKNOWN_HOST', kind: 'permanent' });
    await expect(
      provider.create({ host: 'h1', name: 'ok-name', uid: newUid(), image: 'nope' }),
    ).rejects.toMatchObject({ code: 'ERR_UNKNOWN_IMAGE', kind: 'permanent' });
    expect(await poolVolumes()).toEqual(before);
    expect(await virshFails(['dominfo', 'ok-name'])).toMatch(/failed to get domain/);
  });

  it('a host no longer configured: delete succeeds with a warning', async () => {
    await provider.delete('gone-host/some-vm');
    expect(logLines.some((l) => JSON.stringify(l).includes('host is not configured'))).toBe(true);
  });
});

describe('what an administrator did is not undone', () => {
  it('a domain paused by an administrator is not resumed by a repeat create: permanent', async () => {
    const name = instanceName();
    const uid = newUid();
    await provider.create({ host: 'h1', name, uid, image: imageTag });
    await virsh(['suspend', name]);
    try {
      await expect(
        provider.create({ host: 'h1', name, uid, image: imageTag }),
      ).rejects.toMatchObject({ code: 'ERR_DOMAIN_NOT_RUNNING', kind: 'permanent' });
      expect((await virsh(['domstate', name])).trim()).toBe('paused');
    } finally {
      await provider.delete(`h1/${name}`);
    }
  }, 60_000);

  it('an overlay volume kvm2 did not make for this image is never written over: permanent', async () => {
    const name = instanceName();
    await virsh(['vol-create-as', 'default', `kvm2-${name}.qcow2`, '16M', '--format', 'qcow2']);
    const overlayPath = (
      await virsh(['vol-path', '--pool', 'default', `kvm2-${name}.qcow2`])
    ).trim();
    const before = fs.statSync(overlayPath);
    try {
      await expect(
        provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
      ).rejects.toMatchObject({ code: 'ERR_FOREIGN_VOLUME', kind: 'permanent' });
      const after = fs.statSync(overlayPath);
      expect([after.ino, after.mtimeMs, after.size]).toEqual([
        before.ino,
        before.mtimeMs,
        before.size,
      ]);
      expect(await domainExists(name)).toBe(false);
    } finally {
      await virsh(['vol-delete', '--pool', 'default', `kvm2-${name}.qcow2`]).catch(() => undefined);
      await virsh(['vol-delete', '--pool', 'default', `kvm2-${name}-seed.iso`]).catch(
        () => undefined,
      );
    }
  });
});

describe('the serial log (hosts[].serialLogDir, docs/configuration.md)', () => {
  /** A provider on the same host, sshd and image whose host has this serialLogDir. */
  function providerWith(serialLogDir: string): Provider {
    const config = parseConfig({
      hosts: [testHost(sshd, net.name, { serialLogDir })],
      images: { [imageTag]: { url: images.url('/tiny.qcow2'), format: 'qcow2' } },
      defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
    });
    return new Provider(config, { logger, tracer: tracerProvider.getTracer('test') });
  }

  it('a host without the directory: ERR_SERIAL_LOG (permanent) naming the setting, and nothing left behind', async () => {
    const missing = path.join(dir, 'no-such-log-dir');
    const p = providerWith(missing);
    const name = instanceName();
    const before = await poolVolumes();
    try {
      const err: unknown = await p
        .create({ host: 'h1', name, uid: newUid(), image: imageTag })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toMatchObject({ code: 'ERR_SERIAL_LOG', kind: 'permanent' });
      const message = (err as Error).message;
      expect(message).toContain('kvm2.hosts[0].serialLogDir');
      expect(message).toContain(`${missing}/${name}.serial.log`); // libvirt's own words
      expect(message).toContain("host 'h1'");
      // The domain and the volumes the create made for it are gone again.
      expect(await domainExists(name)).toBe(false);
      expect((await poolVolumes()).filter((v) => !before.includes(v))).toEqual([]);
      expect(fs.existsSync(missing)).toBe(false);

      // Once the directory is there, the same create goes through.
      fs.mkdirSync(missing);
      await p.create({ host: 'h1', name, uid: newUid(), image: imageTag });
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      expect(fs.existsSync(serialLogFile(missing, name))).toBe(true);
    } finally {
      await p.delete(`h1/${name}`).catch(() => undefined);
      await p.close();
    }
  }, 60_000);

  it('none: no file behind the console, and the create runs', async () => {
    const p = providerWith('none');
    const name = instanceName();
    try {
      await p.create({ host: 'h1', name, uid: newUid(), image: imageTag });
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      const xml = await virsh(['dumpxml', name]);
      expect(xml).toMatch(/<serial type='pty'>/);
      expect(xml).not.toContain('<log ');
    } finally {
      await p.delete(`h1/${name}`).catch(() => undefined);
      await p.close();
    }
  }, 60_000);
});

describe('listByTag', () => {
  it('lists only kvm2 instances with the tag, with identity from metadata', async () => {
    const tag = uniqueName('tag');
    const a = instanceName();
    const b = instanceName();
    const other = instanceName();
    const uids = [newUid(), newUid(), newUid()];
    await provider.create({ host: 'h1', name: a, uid: uids[0]!, image: imageTag, tag });
    await provider.create({ host: 'h1', name: b, uid: uids[1]!, image: imageTag, tag });
    await provider.create({
      host: 'h1',
      name: other,
      uid: uids[2]!,
      image: imageTag,
      tag: 'other',
    });
    const listed = await provider.listByTag(tag);
    expect(listed.map((i) => i.name).sort()).toEqual([a, b].sort());
    expect(listed.find((i) => i.name === a)).toMatchObject({ uid: uids[0], id: `h1/${a}`, tag });
    for (const n of [a, b, other]) await provider.delete(`h1/${n}`);
    expect(await provider.listByTag(tag)).toEqual([]);
  }, 90_000);

  it('fails whole when a host cannot be listed', async () => {
    const config = parseConfig({
      hosts: [
        testHost(sshd, net.name),
        testHost(sshd, net.name, {
          name: 'h2',
          uri: sshd.uri('/system', { socket: '/nonexistent/libvirt-sock' }),
        }),
      ],
    });
    const partial = new Provider(config);
    try {
      await expect(partial.listByTag('anything')).rejects.toMatchObject({
        code: 'ERR_PARTIAL_VIEW',
        kind: 'transient',
      });
    } finally {
      await partial.close();
    }
  });
});

describe('telemetry and secrets', () => {
  it('provider.create is the parent of kvm2.dial, kvm2.download and the define call; no secret leaks', async () => {
    exporter.reset();
    const config = parseConfig({
      hosts: [testHost(sshd, net.name)],
      images: {
        // A fresh image (its own digest), so this create downloads.
        [`${imageTag}-t`]: { url: images.url('/tiny.qcow2?t'), format: 'qcow2' },
      },
      defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
    });
    images.serve('/tiny.qcow2?t', { file: path.join(dir, 'tiny.qcow2') });
    const fresh = new Provider(config, { logger, tracer: tracerProvider.getTracer('test') });
    const name = instanceName();
    try {
      await fresh.create({
        host: 'h1',
        name,
        uid: newUid(),
        image: `${imageTag}-t`,
        userData: `#cloud-config\n# ${SENTINEL}\n`,
      });
      await fresh.delete(`h1/${name}`);
      // An error raised after the seed was built and uploaded (the network is down at start)
      // must not carry user-data either.
      await virsh(['net-destroy', net.name]);
      try {
        const err = await fresh
          .create({ host: 'h1', name, uid: newUid(), image: `${imageTag}-t`, userData: SENTINEL })
          .catch((e: Error) => e);
        expect(err).toBeInstanceOf(Error);
        expect((err as Error).message).toMatch(/network/i);
        expect(
          JSON.stringify({ m: (err as Error).message, c: String((err as Error).cause) }),
        ).not.toContain(SENTINEL);
      } finally {
        await virsh(['net-start', net.name]);
        await fresh.delete(`h1/${name}`);
      }
    } finally {
      await fresh.close();
    }
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'provider.create');
    expect(root).toBeDefined();
    const rootId = root!.spanContext().spanId;
    const descends = (spanId: string | undefined): boolean => {
      for (let id = spanId, hops = 0; id !== undefined && hops < 10; hops++) {
        if (id === rootId) return true;
        id = spans.find((s) => s.spanContext().spanId === id)?.parentSpanContext?.spanId;
      }
      return false;
    };
    for (const n of ['kvm2.dial', 'kvm2.download', 'kvm2.DomainDefineXMLFlags']) {
      const span = spans.find(
        (s) => s.name === n && s.spanContext().traceId === root!.spanContext().traceId,
      );
      expect(span, n).toBeDefined();
      expect(descends(span!.parentSpanContext?.spanId), n).toBe(true);
    }
    const everything =
      JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events, s.status])) +
      JSON.stringify(logLines);
    expect(everything).not.toContain(SENTINEL);
  }, 90_000);
});
