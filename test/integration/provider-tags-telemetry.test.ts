// The provider's listByTag, and its telemetry, against the real libvirtd through the harness's
// sshd: instances listed by tag from their metadata, a listing that fails whole, and the spans
// of a create (no user-data in any span, log line or error).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid } from '../../src/provider/core/ids.js';
import { Provider } from '../../src/provider/provider.js';
import type { ImageServer } from '../harness/image-server.js';
import type { TestNetwork } from '../harness/libvirt-objects.js';
import { providerHooks, providerRig, SENTINEL } from '../harness/provider-rig.js';
import type { Sshd } from '../harness/sshd.js';
import { testHost } from '../harness/test-host.js';
import { uniqueName, virsh } from '../harness/virsh.js';

const rig = providerRig();
const { exporter, imageTag, instanceName, logger, logLines, tracerProvider } = rig;
let sshd: Sshd;
let images: ImageServer;
let net: TestNetwork;
let dir: string;
let provider: Provider;

providerHooks(rig, (setup) => ({ sshd, images, net, dir, provider } = setup));

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

  it('skips, with a warning, a kvm2 domain renamed to a name that is not a DNS label', async () => {
    const tag = uniqueName('tag');
    const kept = instanceName();
    const renamed = instanceName();
    const odd = `${renamed}.old`;
    await provider.create({ host: 'h1', name: kept, uid: newUid(), image: imageTag, tag });
    await provider.create({ host: 'h1', name: renamed, uid: newUid(), image: imageTag, tag });
    // What an operator does by hand: libvirt renames only a domain that is shut off.
    await virsh(['destroy', renamed]);
    await virsh(['domrename', renamed, odd]);
    try {
      const listed = await provider.listByTag(tag);
      expect(listed.map((i) => i.name)).toEqual([kept]);
      expect((await provider.listHost('h1')).map((i) => i.name)).toContain(kept);
      expect(
        logLines.some((l) => l['domain'] === odd && String(l['msg']).includes('skipped')),
      ).toBe(true);
    } finally {
      // Back under its own name, for the rig's clean-up.
      await virsh(['domrename', odd, renamed]).catch(() => undefined);
    }
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
