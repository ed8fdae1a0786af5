// The configuration schema (SPEC §2), every key with its default; docs/configuration.md is its
// reference. Objects are strict at every level: a misspelt key is an error, never ignored.
// Durations and sizes come out as numbers (milliseconds, bytes); nothing here dials.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { redactUrl } from '../../errors/redact-url.js';
import { parseLibvirtUri } from '../../libvirt/transport/uri.js';
import {
  INTERFACE_NAME_RULE,
  isInterfaceName,
  isXmlSafe,
  MAX_VCPUS,
  XML_UNSAFE_MESSAGE,
} from '../xml/types.js';
import { vendorPartProblem } from '../seed/vendor-part.js';
import { daemonKey } from './same-daemon.js';
import { duration, hostName, isLoopback, listen, parseListen, size } from './values.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_RULE =
  'lowercase letters, digits and dashes, 1 to 63, not starting or ending with a dash';

const label = (what: string) =>
  z.string().regex(DNS_LABEL, `${what} must be a DNS label (${LABEL_RULE})`);

const positiveInt = z.number().int('must be a whole number').positive('must be positive');

/** libvirt object names (pools, networks): not empty, no slash, no whitespace, XML-safe. */
const objectName = z
  .string()
  .regex(/^[^/\s]+$/, 'must be a name without slashes or whitespace, not empty')
  .refine(isXmlSafe, XML_UNSAFE_MESSAGE);

const libvirtUri = z.string().superRefine((uri, ctx) => {
  try {
    parseLibvirtUri(uri);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
  }
});

export type CpuMode = 'host-passthrough' | 'host-model' | 'none';

/** Where Debian's libvirt-daemon-system keeps the qemu driver's per-domain logs. */
export const DEFAULT_SERIAL_LOG_DIR = '/var/log/libvirt/qemu';

/** A directory on the host (absolute, normalised), or `none` for no serial log file. */
const serialLogDir = z
  .string()
  .refine(
    (dir) =>
      dir === 'none' || (dir.startsWith('/') && !dir.split('/').includes('..') && isXmlSafe(dir)),
    "must be an absolute directory on the host (no '..', no control characters) or 'none'",
  )
  .transform((dir) => (dir === 'none' ? null : dir.replace(/\/+$/, '') || '/'));

const hostFields = z.strictObject({
  name: label('host name'),
  uri: libvirtUri,
  pool: objectName.default('default'),
  network: objectName.optional(),
  bridge: z.string().refine(isInterfaceName, `must be ${INTERFACE_NAME_RULE}`).optional(),
  zone: label('zone').optional(),
  concurrency: positiveInt.default(4),
  domainType: z.enum(['kvm', 'qemu']).default('kvm'),
  firmware: z.enum(['uefi', 'bios']).default('uefi'),
  cpuMode: z.enum(['host-passthrough', 'host-model', 'none']).optional(),
  serialLogDir: serialLogDir.default(DEFAULT_SERIAL_LOG_DIR),
  /** What an image fill leaves free in the pool: it stops before taking the last of it. */
  poolReserve: size.prefault('1GiB'),
});
type HostFields = z.output<typeof hostFields>;
type HostCommon = Omit<HostFields, 'network' | 'bridge' | 'cpuMode'> & { cpuMode: CpuMode };
/** A host reaches guests through a libvirt network or a host bridge: exactly one of them. */
export type HostConfigOut =
  | (HostCommon & { network: string; bridge?: undefined })
  | (HostCommon & { bridge: string; network?: undefined });

const host = hostFields
  .superRefine((h, ctx) => {
    if ((h.network === undefined) === (h.bridge === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: h.network === undefined ? [] : ['bridge'],
        message:
          h.network === undefined
            ? 'set network (a libvirt network) or bridge (a host bridge)'
            : 'set network or bridge, not both',
      });
    }
    if (h.domainType === 'qemu' && h.cpuMode === 'host-passthrough') {
      ctx.addIssue({
        code: 'custom',
        path: ['cpuMode'],
        message:
          "host-passthrough needs domainType 'kvm'; plain qemu (TCG) cannot pass the host CPU through",
      });
    }
  })
  .transform((h): HostConfigOut => {
    const { network, bridge, cpuMode, ...rest } = h;
    // TCG emulates a generic CPU well; host-passthrough is what KVM guests want (SPEC §2).
    const common = {
      ...rest,
      cpuMode: cpuMode ?? (h.domainType === 'kvm' ? 'host-passthrough' : 'none'),
    };
    return network !== undefined ? { ...common, network } : { ...common, bridge: bridge ?? '' };
  });

const hosts = z
  .array(host)
  .min(1, 'at least one host is required')
  .superRefine((list, ctx) => {
    const first = new Map<string, number>();
    list.forEach((h, i) => {
      const earlier = first.get(h.name);
      if (earlier === undefined) first.set(h.name, i);
      else
        ctx.addIssue({
          code: 'custom',
          path: [i, 'name'],
          message: `duplicate host name '${h.name}' (also hosts[${earlier}])`,
        });
    });
    // One daemon under two entries: its domains would have two ids each (same-daemon.ts).
    const daemons = new Map<string, number>();
    list.forEach((h, i) => {
      const key = daemonKey(h.uri);
      if (key === undefined) return;
      const earlier = daemons.get(key);
      if (earlier === undefined) daemons.set(key, i);
      else
        ctx.addIssue({
          code: 'custom',
          path: [i, 'uri'],
          message: `host '${h.name}' reaches the same libvirt daemon as host '${list[earlier]?.name ?? ''}' (hosts[${earlier}]): its domains would be listed, and deleted, twice`,
        });
    });
  });

/** A URL's user name and password decode (each `%` starts an escape), as ioredis and fetch need. */
function userinfoDecodes(url: URL): boolean {
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    return true;
  } catch {
    return false;
  }
}

const USERINFO_ENCODING = 'its user name or password is not percent-encoded (a % is written %25)';

/**
 * Where an image comes from: an http(s):// URL, or a local file on the worker's machine as a
 * `file:///path` URL or an absolute path, which comes out as its file URL (one cache key for
 * either spelling).
 */
const imageUrl = z
  .string()
  .superRefine((value, ctx) => {
    if (value.startsWith('/')) {
      if (value.split('/').includes('..') || [...value].some((c) => c.charCodeAt(0) < 0x20)) {
        ctx.addIssue({
          code: 'custom',
          message: `must be an absolute path without '..', got ${JSON.stringify(value)}`,
        });
      }
      return;
    }
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      // reported below
    }
    if (url?.protocol === 'file:') {
      if (url.host !== '' && url.host !== 'localhost') {
        ctx.addIssue({
          code: 'custom',
          message: `must name a local file (file:///path), got ${JSON.stringify(redactUrl(value))}`,
        });
      } else if (url.search !== '' || url.hash !== '') {
        ctx.addIssue({
          code: 'custom',
          message: `a file:// URL takes no query or fragment, got ${JSON.stringify(redactUrl(value))}`,
        });
      }
      return;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      ctx.addIssue({
        code: 'custom',
        message: `must be an http:// or https:// URL, a file:/// URL or an absolute path, got ${JSON.stringify(redactUrl(value))}`,
      });
    } else if (!userinfoDecodes(url)) {
      // Sent as a Basic Authorization header, decoded: a bare % would fail every fill.
      ctx.addIssue({ code: 'custom', message: USERINFO_ENCODING });
    }
  })
  .transform((value) => {
    if (value.startsWith('/')) return pathToFileURL(value).href;
    const url = new URL(value);
    return url.protocol === 'file:' ? pathToFileURL(fileURLToPath(url)).href : value;
  });

const vendorPart = z
  .strictObject({
    contentType: z.string(),
    content: z.string().max(65_536, 'at most 65,536 characters'),
    filename: z.string().optional(),
  })
  .superRefine((part, ctx) => {
    const problem = vendorPartProblem(part);
    if (problem !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [problem.field],
        message: `${JSON.stringify(problem.value)} ${problem.message}`,
      });
    }
  });

const image = z.strictObject({
  url: imageUrl,
  sha256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits')
    .transform((s) => s.toLowerCase())
    .optional(),
  format: z.enum(['qcow2', 'raw']).default('qcow2'),
  /** The most bytes a fill takes from the server, whatever it says or does not say. */
  maxSize: size.prefault('20GiB'),
  /** vendor-data parts the image's guests get after kvm2's guest-agent part (docs/seed.md). */
  vendorData: z.array(vendorPart).max(16, 'at most 16 parts').default([]),
});

const images = z.record(label('image name'), image).default({});

// Within what a create request may ask for (src/provider/core/request.ts): a default stands in
// for the request's own value, and beyond those a create would fail after it began writing.
const defaults = z.strictObject({
  vcpus: positiveInt.max(MAX_VCPUS, `must be at most ${MAX_VCPUS}`).default(1),
  memoryMiB: positiveInt.max(4 * 1024 * 1024, 'must be at most 4 TiB').default(1024),
  diskGiB: positiveInt.max(4 * 1024, 'must be at most 4 TiB').default(10),
  addressTimeout: duration
    .prefault('5m')
    .refine((ms) => ms >= 1000, 'must be at least 1s (a bare number is milliseconds)'),
});

const health = z
  .strictObject({
    every: duration.prefault('60s'),
    timeout: duration.prefault('20s'),
    poolLowSpaceBytes: size.prefault('10GiB'),
  })
  .superRefine((h, ctx) => {
    if (h.every < 1000) {
      ctx.addIssue({
        code: 'custom',
        path: ['every'],
        message: 'must be at least 1s (a bare number is milliseconds)',
      });
    }
    if (h.timeout > h.every) {
      ctx.addIssue({
        code: 'custom',
        path: ['timeout'],
        message: 'must not exceed health.every (rounds would overlap)',
      });
    }
  });

const board = z
  .strictObject({
    listen: listen.prefault('127.0.0.1:3000'),
    auth: z
      .strictObject({
        username: z.string().min(1, 'must not be empty'),
        password: z.string().min(1, 'must not be empty'),
      })
      .optional(),
    readOnly: z.boolean().default(false),
    allowedHosts: z.array(hostName).default([]),
  })
  .superRefine((b, ctx) => {
    if (b.auth === undefined && !isLoopback(b.listen.host)) {
      ctx.addIssue({
        code: 'custom',
        path: ['auth'],
        message: `required: board.listen ${b.listen.host}:${b.listen.port} is reachable beyond loopback`,
      });
    }
  });

const worker = z
  .strictObject({
    /** /healthz, /readyz and /metrics. */
    listen: listen.prefault('127.0.0.1:9464'),
    /** SIGTERM: how long active jobs get to finish before they are released. */
    shutdownTimeout: duration.prefault('30s'),
    /** Instance and image locks: how long one outlives its holder's last renewal. */
    lockTtl: duration.prefault('30s'),
    /** BullMQ's job lock and stall check: how soon a dead worker's job runs elsewhere. */
    stalledAfter: duration.prefault('30s'),
    /** The address wait: how often a create re-checks the guest for its address. */
    addressPoll: duration.prefault('3s'),
  })
  .superRefine((w, ctx) => {
    for (const key of ['lockTtl', 'stalledAfter', 'addressPoll'] as const) {
      if (w[key] < 100) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'must be at least 100ms' });
      }
    }
  });

const events = z
  .strictObject({
    /** Watch each served host's domains and publish instance events (docs/events.md). */
    watch: z.boolean().default(true),
    /** One watcher per host across all workers: how soon another takes over from a dead one. */
    leaseTtl: duration.prefault('15s'),
  })
  .superRefine((e, ctx) => {
    if (e.leaseTtl < 300) {
      ctx.addIssue({ code: 'custom', path: ['leaseTtl'], message: 'must be at least 300ms' });
    }
  });

/** `host:port` of a server kvm2 dials (port 1 to 65535). */
const endpoint = z.string().transform((value, ctx) => {
  const address = parseListen(value);
  if (address === undefined || address.port === 0) {
    ctx.addIssue({
      code: 'custom',
      message: `expected host:port (e.g. 10.0.0.5:26379, [::1]:26379), got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return address;
});

const secret = z.string().min(1, 'must not be empty');

/** Redis Sentinel (the usual HA setup for BullMQ): the master named `name`, found by asking. */
const sentinel = z.strictObject({
  /** The master's name in the sentinels' configuration (`sentinel monitor <name> …`). */
  name: z.string().regex(/^\S+$/, 'must not be empty or contain whitespace'),
  nodes: z.array(endpoint).min(1, 'must name at least one sentinel'),
  /** The master's and replicas' (ACL user and) password; messages never echo them. */
  username: secret.optional(),
  password: secret.optional(),
  /** The sentinels' own password, when they have one. */
  sentinelPassword: secret.optional(),
  /** TLS to the master and to the sentinels. */
  tls: z.boolean().default(false),
  db: z.number().int('must be a whole number').min(0, 'must be 0 or more').default(0),
  /**
   * An enqueue counts once this many replicas have it (WAIT): Redis replicates asynchronously,
   * and a failover loses what the old master acknowledged and had not sent on. 0: do not wait.
   */
  confirmReplicas: z.number().int('must be a whole number').min(0, 'must be 0 or more').default(1),
  confirmTimeout: duration.prefault('1s'),
});

/** Redis Cluster: any of its nodes; the client learns the rest and the slots from them. */
const cluster = z.strictObject({
  nodes: z.array(endpoint).min(1, 'must name at least one node'),
  /** Every node's (ACL user and) password; messages never echo them. */
  username: secret.optional(),
  password: secret.optional(),
  /** TLS to every node. */
  tls: z.boolean().default(false),
});

/**
 * The slot of a key is that of its first `{…}` with something inside (Redis Cluster's hash
 * tag); every kvm2 and BullMQ key starts with the prefix, so a prefix with one puts them all in
 * one slot, which every Lua script of both needs.
 */
const HASH_TAG = /^[^{]*\{[^}]+\}/;

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * What ioredis would take otherwise: a path that is no database number (it SELECTs NaN and the
 * process dies, or a database the server lacks, and stays on db 0), query parameters (each an
 * option of the connection: `commandTimeout` would break BullMQ's blocking reads), a fragment
 * (a password's unencoded `#`). The URL may hold a password: messages never echo it.
 */
function redisUrlProblems(value: string, ctx: z.RefinementCtx): void {
  const url = URL.parse(value);
  if (url === null || !/^rediss?:$/.test(url.protocol) || url.hostname === '') {
    ctx.addIssue({ code: 'custom', message: 'must be a redis:// or rediss:// URL with a host' });
    return;
  }
  const problems: string[] = [];
  if (value.includes('#')) {
    problems.push("has a fragment ('#'): a password holding # / ? @ or % must be percent-encoded");
  } else {
    if (!userinfoDecodes(url)) problems.push(USERINFO_ENCODING);
    if (!/^(\/(0|[1-9]\d{0,8})?)?$/.test(url.pathname)) {
      problems.push(
        `its path must be a database number (redis://host:6379/2), got ${JSON.stringify(url.pathname)}`,
      );
    }
    const options = [...new Set(url.searchParams.keys())].filter((k) => k !== 'family');
    if (options.length > 0) {
      problems.push(
        `takes no query parameter but 'family' (the database is its path), got ${options.map((k) => `'${k}'`).join(', ')}`,
      );
    }
  }
  for (const message of problems) ctx.addIssue({ code: 'custom', message });
}

const redis = z
  .strictObject({
    // The URL may hold a password: messages never echo it.
    url: z.string().superRefine(redisUrlProblems).optional(),
    sentinel: sentinel.optional(),
    cluster: cluster.optional(),
    // Hash-tagged so every kvm2 key lands in one Redis Cluster slot (BullMQ needs that).
    prefix: z.string().regex(/^\S+$/, 'must not be empty or contain whitespace').default('{kvm2}'),
  })
  .superRefine((r, ctx) => {
    const given = (['url', 'sentinel', 'cluster'] as const).filter((k) => r[k] !== undefined);
    if (given.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: [given[1] ?? 'url'],
        message: `give one of redis.url, redis.sentinel and redis.cluster, not ${given.map((k) => `redis.${k}`).join(' and ')}`,
      });
    }
    if (r.cluster !== undefined && !HASH_TAG.test(r.prefix)) {
      ctx.addIssue({
        code: 'custom',
        path: ['prefix'],
        message: `on Redis Cluster the prefix must hold a {hash tag} (e.g. "{kvm2}") so every key lands in one slot, got ${JSON.stringify(r.prefix)}`,
      });
    }
  })
  .transform((r) => ({
    ...r,
    url:
      r.sentinel === undefined && r.cluster === undefined
        ? (r.url ?? DEFAULT_REDIS_URL)
        : undefined,
  }));

export const configSchema = z.strictObject({
  redis: redis.prefault({}),
  hosts,
  images,
  defaults: defaults.prefault({}),
  health: health.prefault({}),
  board: board.prefault({}),
  worker: worker.prefault({}),
  events: events.prefault({}),
});

type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** The validated, frozen configuration. Durations are milliseconds, sizes bytes. */
export type Kvm2Config = DeepReadonly<z.output<typeof configSchema>>;
export type HostConfig = Kvm2Config['hosts'][number];
export type ImageConfig = Kvm2Config['images'][string];
export type DefaultsConfig = Kvm2Config['defaults'];
export type HealthConfig = Kvm2Config['health'];
export type BoardConfig = Kvm2Config['board'];
export type WorkerConfig = Kvm2Config['worker'];
export type RedisConfig = Kvm2Config['redis'];
export type SentinelConfig = NonNullable<RedisConfig['sentinel']>;
export type ClusterConfig = NonNullable<RedisConfig['cluster']>;
export type EventsConfig = Kvm2Config['events'];

/** Where `npm run setup` installs the demo image the embedded default names. */
export const DEMO_IMAGE_PATH = '/var/lib/kvm2/images/demo.qcow2';

/**
 * With no file (SPEC §2): the local daemon, pool and network `default`, a local Redis, and the
 * demo image setup installs (docs/configuration.md, "The embedded default"). The host runs
 * guests under TCG (`qemu`, no host CPU mode): a demo that starts on any machine, nested ones
 * included, where KVM cannot run UEFI guests; real hosts are configured with `kvm`.
 */
export const EMBEDDED_DEFAULT: unknown = Object.freeze({
  hosts: [
    {
      name: 'local',
      uri: 'qemu:///system',
      pool: 'default',
      network: 'default',
      domainType: 'qemu',
      cpuMode: 'none',
    },
  ],
  images: { demo: { url: DEMO_IMAGE_PATH, format: 'qcow2' } },
});
