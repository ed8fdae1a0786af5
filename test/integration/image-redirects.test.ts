// Redirects an image download follows and refuses (docs/security.md, item 12), against real HTTP
// servers on loopback: an internal mirror redirecting to another port is followed, credentials
// stay with the configured origin, a sixth redirect, a non-HTTP scheme and a link-local target
// are refused as permanent, the last before any connection to it (undici's own diagnostics
// channel is the witness). A fill through the real libvirtd shows the whole path: the mirror's
// image becomes the base, the redirect to a metadata address leaves nothing in the pool.
// The https and public-origin cases, which loopback cannot serve, are test/unit/image-redirects.
import { createHash, randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import dns from 'node:dns/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import type { ImageConfig } from '../../src/provider/config/schema.js';
import { createContext, type ProviderContext } from '../../src/provider/core/host-context.js';
import { baseVolumeName, markerVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { imageSource, openImage, probeImageSize } from '../../src/provider/image/download.js';
import {
  failure,
  POOL,
  poolVolumes,
  removeVolume,
  sha256File,
} from '../harness/image-cache-rig.js';
import { startImageServer, type ImageServer } from '../harness/image-server.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName } from '../harness/virsh.js';

const HOST = 'redir';
const IMAGE = randomBytes(512 * 1024);
const IMAGE_SHA256 = createHash('sha256').update(IMAGE).digest('hex');
const TOKEN = 'tok-3c9a71e0';
/** Where a cloud's metadata service would be; port 9 (discard), never reached. */
const METADATA = 'http://169.254.0.1:9';
/** An address of the documentation range, standing for a public server. */
const PUBLIC = '203.0.113.7';

/** A loopback server that answers each path with a redirect to `routes.get(path)`. */
interface Redirector {
  readonly origin: string;
  route(path: string, location: string, status?: number): void;
  /** The Authorization header of each request, in order, by path. */
  readonly seen: Map<string, (string | undefined)[]>;
  close(): Promise<void>;
}

async function startRedirector(): Promise<Redirector> {
  const routes = new Map<string, { location: string; status: number }>();
  const seen = new Map<string, (string | undefined)[]>();
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    seen.set(path, [...(seen.get(path) ?? []), req.headers.authorization]);
    const route = routes.get(path);
    if (route === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(route.status, { location: route.location, 'content-type': 'text/plain' });
    res.end(req.method === 'HEAD' ? undefined : 'moved\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    route: (path, location, status = 302) => routes.set(path, { location, status }),
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Hosts undici began to connect to while `fn` ran. */
async function connectsDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const hosts: string[] = [];
  const onConnect = (message: unknown): void => {
    const params = (message as { connectParams?: { hostname?: string } }).connectParams;
    hosts.push(params?.hostname ?? '?');
  };
  diagnostics.subscribe('undici:client:beforeConnect', onConnect);
  try {
    await fn();
  } finally {
    diagnostics.unsubscribe('undici:client:beforeConnect', onConnect);
  }
  return hosts;
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

const run = uniqueName('kvm2-redir');
let images: ImageServer;
let mirror: Redirector;
let other: Redirector;
let sshd: Sshd;
let ctx: ProviderContext | undefined;
const signal = (): AbortSignal => AbortSignal.timeout(20_000);
const source = (name: string, url: string) => imageSource(name, { url } as ImageConfig);

beforeAll(async () => {
  [images, mirror, other, sshd] = await Promise.all([
    startImageServer(),
    startRedirector(),
    startRedirector(),
    startSshd(),
  ]);
  images.serve(`/${run}/img`, { data: IMAGE });
});

afterAll(async () => {
  if (ctx !== undefined) {
    for (const image of Object.values(ctx.config.images)) {
      await removeVolume(baseVolumeName(image));
      await removeVolume(markerVolumeName(image));
    }
    await ctx.hosts.close();
  }
  await Promise.all([images?.close(), mirror?.close(), other?.close(), sshd?.stop()]);
});

describe('redirects that are followed', () => {
  it('a loopback image redirecting to another loopback port (an internal mirror)', async () => {
    mirror.route('/mirror/img', `${other.origin}/next/img`, 301);
    other.route('/next/img', images.url(`/${run}/img`), 307);
    const src = source('mirrored', `${mirror.origin}/mirror/img`);
    expect(await probeImageSize(src, { signal: signal() })).toBe(IMAGE.length);
    const response = await openImage(src, { signal: signal() });
    expect(response.length).toBe(IMAGE.length);
    expect((await readAll(response.body)).equals(IMAGE)).toBe(true);
  });

  it('five redirects in a row', async () => {
    for (let i = 5; i > 1; i--) mirror.route(`/five/${i}`, `/five/${i - 1}`);
    mirror.route('/five/1', images.url(`/${run}/img`));
    const response = await openImage(source('five', `${mirror.origin}/five/5`), {
      signal: signal(),
    });
    expect((await readAll(response.body)).equals(IMAGE)).toBe(true);
  });

  it('credentials go along within the configured origin only', async () => {
    mirror.route('/auth/a', '/auth/b'); // same origin: the header goes along
    mirror.route('/auth/b', `${other.origin}/auth/c`);
    other.route('/auth/c', `${mirror.origin}/auth/d`); // back: the header stays dropped
    mirror.route('/auth/d', images.url(`/${run}/img`));
    const url = `http://kvm2user:${TOKEN}@${new URL(mirror.origin).host}/auth/a`;
    const response = await openImage(source('auth', url), { signal: signal() });
    await readAll(response.body);
    const basic = `Basic ${Buffer.from(`kvm2user:${TOKEN}`).toString('base64')}`;
    expect(mirror.seen.get('/auth/a')).toEqual([basic]);
    expect(mirror.seen.get('/auth/b')).toEqual([basic]);
    expect(other.seen.get('/auth/c')).toEqual([undefined]);
    expect(mirror.seen.get('/auth/d')).toEqual([undefined]);
    expect(images.stats(`/${run}/img`).authorization).toBeUndefined();
  });

  it('an answer after a redirect is named by the host that gave it', async () => {
    mirror.route('/gone/img', images.url(`/${run}/gone`));
    const err = await failure(
      openImage(source('gone', `${mirror.origin}/gone/img`), { signal: signal() }),
    );
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
    const host = (origin: string): string => new URL(origin).host;
    expect(err.message).toBe(
      `image 'gone': ${host(images.origin)} (redirected from ${host(mirror.origin)}) answered HTTP 404 Not Found`,
    );
  });

  it('a fill through the mirror caches the image itself', async () => {
    mirror.route('/fill/img', images.url(`/${run}/img`));
    ctx = createContext(
      parseConfig({
        hosts: [{ name: HOST, uri: sshd.uri('/system'), pool: POOL, network: 'default' }],
        images: {
          [`${run}-mirrored`]: {
            url: `${mirror.origin}/fill/img`,
            sha256: IMAGE_SHA256,
            format: 'raw',
          },
          [`${run}-metadata`]: {
            url: `${mirror.origin}/fill/metadata`,
            format: 'raw',
          },
        },
      }),
    );
    const base = await ensureBaseImage(ctx, HOST, `${run}-mirrored`, {});
    expect(base.sha256).toBe(IMAGE_SHA256);
    expect(await sha256File(base.path)).toBe(IMAGE_SHA256);
  }, 60_000);
});

describe('redirects that are refused: permanent ERR_IMAGE_HTTP naming the image and the hop', () => {
  it('a sixth redirect, before it is requested', async () => {
    for (let i = 6; i > 1; i--) mirror.route(`/six/${i}`, `/six/${i - 1}`);
    mirror.route('/six/1', images.url(`/${run}/six`));
    const err = await failure(
      openImage(source('six', `${mirror.origin}/six/6`), { signal: signal() }),
    );
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
    expect(err.message).toBe(
      `image 'six': redirect 6 from ${mirror.origin} to ${images.origin} refused: more than 5 redirects`,
    );
    expect(images.stats(`/${run}/six`).gets).toBe(0);
  });

  it('a Location that is not http or https', async () => {
    mirror.route('/file/img', 'file:///etc/passwd');
    const err = await failure(
      openImage(source('file', `${mirror.origin}/file/img`), { signal: signal() }),
    );
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
    expect(err.message).toContain(`image 'file': redirect 1 from ${mirror.origin} to file://`);
  });

  it('a Location with credentials in it, without echoing them', async () => {
    mirror.route('/creds/img', `http://intruder:${TOKEN}@${new URL(other.origin).host}/creds/img`);
    const err = await failure(
      openImage(source('creds', `${mirror.origin}/creds/img`), { signal: signal() }),
    );
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
    expect(err.message).toBe(
      `image 'creds': redirect 1 from ${mirror.origin} to ${other.origin} refused: its Location carries credentials`,
    );
    expect(other.seen.get('/creds/img')).toBeUndefined();
  });

  it('a link-local target, for GET and HEAD, without connecting to it', async () => {
    mirror.route('/meta/img', `${METADATA}/latest/meta-data/creds?sig=${TOKEN}`);
    const src = source('meta', `${mirror.origin}/meta/img`);
    const errors: (Error & Record<string, unknown>)[] = [];
    const hosts = await connectsDuring(async () => {
      errors.push(await failure(openImage(src, { signal: signal() })));
      errors.push(await failure(probeImageSize(src, { signal: signal() })));
    });
    for (const err of errors) {
      expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
      expect(err.message).toBe(
        `image 'meta': redirect 1 from ${mirror.origin} to ${METADATA} refused: 169.254.0.1 is a link-local or metadata address`,
      );
      expect(err.message).not.toContain(TOKEN);
    }
    expect(hosts.filter((h) => h.startsWith('169.254.'))).toEqual([]);
  });

  it('a fill redirected to a metadata address leaves nothing in the pool', async () => {
    if (ctx === undefined) throw new Error('the fill test runs first');
    mirror.route('/fill/metadata', `${METADATA}/latest/meta-data/iam/security-credentials/`);
    const before = await poolVolumes();
    const err = await failure(ensureBaseImage(ctx, HOST, `${run}-metadata`, {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
    expect(err.message).toContain(`image '${run}-metadata': redirect 1`);
    expect(await poolVolumes()).toEqual(before);
  }, 60_000);

  it('a name that resolves to an internal address only when connecting (DNS rebinding)', async () => {
    // The fault: the worker's resolver says "public" to the check before the request, then
    // 127.0.0.1 to the connection (the check there uses the callback lookup, not this one).
    const publicOnly = (() =>
      Promise.resolve([{ address: PUBLIC, family: 4 }])) as unknown as typeof dns.lookup;
    const spy = vi.spyOn(dns, 'lookup').mockImplementation(publicOnly);
    try {
      const port = (origin: string): string => new URL(origin).port;
      mirror.route('/rebind/img', `http://localhost:${port(images.origin)}/${run}/rebind`);
      const src = source('rebind', `http://localhost:${port(mirror.origin)}/rebind/img`);
      const err = await failure(openImage(src, { signal: signal() }));
      expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
      expect(err.message).toBe(
        `image 'rebind': redirect 1 from http://localhost:${port(mirror.origin)} to http://localhost:${port(images.origin)} refused: 127.0.0.1 is internal and the redirecting server is not`,
      );
      expect(spy).toHaveBeenCalled();
      expect(images.stats(`/${run}/rebind`).gets).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });
});
