// create (SPEC §3): make the instance exist and run, idempotently. Every retry of a create
// carries the same uid, so each step first looks at what a previous attempt left:
//   1 validate · 2 adopt or refuse an existing domain · 3 pool-space precheck · 4 base image
//   5 overlay (reused only when backed by that base) · 6 seed (always rebuilt)
//   7 define with metadata, start, wait until running.
// Steps 3–6 are skipped when the domain exists: it was defined last, so its disks exist. Without
// it, an overlay or seed another domain uses is refused untouched (instance-volumes.ts).
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { LibvirtError } from '../../libvirt/errors.js';
import {
  DomainDefineXMLFlags,
  DomainLookupByName,
  StoragePoolGetInfo,
  type NonnullDomain,
  type NonnullStoragePool,
  type NonnullStorageVol,
} from '../../libvirt/protocol.gen.js';
import { hostConfig, imageConfig, type ProviderContext } from '../core/host-context.js';
import { forgetPool, isStalePool, knownPool, lookupPool } from '../core/pools.js';
import { Kvm2Error } from '../../errors/error.js';
import type { DownloadProgress } from '../image/fill.js';
import { markerVolumeName, type BaseImage } from '../image/base-image.js';
import {
  fillBaseImageOnce,
  findBaseImage,
  forgetBaseImage,
  rememberedBaseImage,
} from '../image/cache.js';
import { lookupVolume } from '../image/volumes.js';
import {
  formatInstanceId,
  instanceLockName,
  macForUid,
  overlayVolumeName,
  seedVolumeName,
  serialLogFile,
} from '../core/ids.js';
import { readInstance, readMetadata, toInstance, type Instance } from '../core/instance.js';
import type { InstanceMetadata } from '../xml/types.js';
import { asOperationError, isNoDomain } from '../core/not-found.js';
import { parseCreateRequest, type ValidCreateRequest } from '../core/request.js';
import { buildSeed } from '../seed/seed.js';
import { buildDomainXml } from '../xml/domain.js';
import { inSpan } from '../core/telemetry.js';
import { removeLocked, undefine } from './delete.js';
import {
  createOverlay,
  overlayState,
  refuseVolumesInUse,
  uploadSeed,
  type VolumeTarget,
} from './instance-volumes.js';
import { startAndWait } from './start-domain.js';

const DEFINE_VALIDATE = 1; // VIR_DOMAIN_DEFINE_VALIDATE: libvirt checks the XML schema

/**
 * Connections whose first define libvirt validated against its schema. The check costs the
 * daemon ~8 ms of RelaxNG per define (3.4 ms without it, 11.1 with, on the test host) and the
 * XML's shape is the builder's and the host's: a connection's first create checks it, the rest
 * are parsed as `virsh define` parses (docs/domain-xml.md).
 */
const schemaChecked = new WeakSet<LibvirtConnection>();

/** Volume look-ups a create sends before it knows it needs them (makeDomain). */
interface EarlyLookups {
  readonly overlay: Promise<NonnullStorageVol | undefined>;
  readonly seed: Promise<NonnullStorageVol | undefined>;
}

/** makeDomain's first calls, sent as soon as the pool's handle is known: look-ups and space. */
interface EarlyCalls extends EarlyLookups {
  readonly space: Promise<{ readonly available: bigint }>;
  /** The seed, built while the calls travel (undefined when it could not be: makeDomain says why). */
  readonly seedImage?: Promise<Buffer | undefined>;
}

/** Marks `p` handled (its taker awaits it later, or nobody does); returns it. */
function guard<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/**
 * The overlay's and the old seed's look-ups (a retry may find either) and the pool's free space,
 * sent together: the first round of `volumes` takes the look-ups, the check of a cached image
 * the free space.
 */
function earlyCalls(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  name: string,
  io: Io,
): EarlyCalls {
  return {
    overlay: guard(lookupVolume(conn, pool, overlayVolumeName(name), io.signal)),
    seed: guard(lookupVolume(conn, pool, seedVolumeName(name), io.signal)),
    space: guard(conn.call(StoragePoolGetInfo, { pool }, io)),
  };
}

/**
 * A base image this process remembered is no longer in the pool, or its marker is not: the
 * marker is written last, so a base without one may be a fill under way (docs/image-cache.md).
 */
class BaseImageGone extends Error {
  constructor(volumeName: string) {
    super(`base image volume '${volumeName}' or its marker is no longer in the pool`);
  }
}

interface Io {
  readonly signal: AbortSignal;
  readonly onProgress?: ((phase: CreatePhase) => void) | undefined;
  /** While this create fills the image cache: bytes streamed, and the total when known. */
  readonly onBytes?: DownloadProgress | undefined;
}

/** Where a create stands, for a progress display: each phase is reported as it begins. */
export type CreatePhase = 'download' | 'volumes' | 'boot';

export async function create(
  ctx: ProviderContext,
  input: unknown,
  options?: {
    signal?: AbortSignal | undefined;
    onProgress?: ((phase: CreatePhase) => void) | undefined;
    onBytes?: DownloadProgress | undefined;
  },
): Promise<Instance> {
  const req = parseCreateRequest(input);
  if (req.host === undefined) {
    throw new Kvm2Error('ERR_NO_HOST_IN_ZONE', 'placement by zone needs a host');
  }
  const host = req.host;
  hostConfig(ctx, host);
  imageConfig(ctx, req.image);
  const id = formatInstanceId(host, req.name);
  const attributes = { 'kvm2.instance': id, 'kvm2.host': host, 'kvm2.image': req.image };
  return inSpan(ctx, 'provider.create', attributes, () =>
    ctx.locks
      .withLock(
        instanceLockName(id),
        (signal) =>
          createLocked(ctx, host, req, {
            signal,
            onProgress: options?.onProgress,
            onBytes: options?.onBytes,
          }),
        {
          signal: options?.signal,
        },
      )
      .catch((err: unknown) => {
        throw asOperationError(err);
      }),
  );
}

async function createLocked(
  ctx: ProviderContext,
  host: string,
  req: ValidCreateRequest,
  io: Io,
): Promise<Instance> {
  const conn = await ctx.hosts.shared(host, io);
  const log = ctx.logger.child({ host, instance: req.name, uid: req.uid });

  // The pool is looked up beside the domain: a create that defines the domain needs it next; one
  // that adopts has spent a read on nothing. (Its failure is the define path's to report.) A
  // pool this connection knows needs no look-up, and makeDomain's first calls go out beside the
  // domain's instead (core/pools.ts).
  const poolName = hostConfig(ctx, host).pool;
  const known = knownPool(conn, poolName);
  const poolLookup = guard(
    known === undefined ? lookupPool(conn, poolName, io) : Promise.resolve(known),
  );
  const sent = known === undefined ? undefined : earlyCalls(conn, known, req.name, io);
  const looked = lookupDomain(conn, req.name, io);
  // With those on the wire, the seed a define needs is built while the answers travel (the bench's
  // create: 1–3 ms of a not yet optimized build, which followed the domain's answer). A create
  // that adopts has built it for nothing.
  const early = sent === undefined ? undefined : { ...sent, seedImage: seedMeanwhile(ctx, req) };
  let dom = await looked;
  // What this create defines, when it defines the domain: its metadata need not be read back.
  let defined: InstanceMetadata | undefined;
  if (dom !== null) {
    const meta = await readMetadata(conn, dom, io);
    if (meta === null) {
      throw new Kvm2Error(
        'ERR_FOREIGN_DOMAIN',
        `domain '${req.name}' already exists on host '${host}' and is not kvm2's: left untouched`,
      );
    }
    if (meta.uid !== req.uid) {
      throw new Kvm2Error(
        'ERR_UID_CONFLICT',
        `instance '${req.name}' on host '${host}' belongs to another create (uid ${meta.uid})`,
      );
    }
    log.info('adopting the domain a previous attempt defined');
  } else {
    const pool = await poolLookup;
    try {
      ({ dom, metadata: defined } = await makeDomain(ctx, conn, host, pool, req, io, early));
    } catch (err) {
      if (known === undefined || !isStalePool(err)) throw err;
      // The pool was defined again since this connection looked it up (its UUID changed): every
      // call on the old handle failed, so nothing of this instance was made with it. Once more,
      // with the pool looked up.
      log.info({ pool: poolName }, 'pool redefined since its last look-up; looking it up again');
      forgetPool(conn, poolName);
      const fresh = await lookupPool(conn, poolName, io);
      ({ dom, metadata: defined } = await makeDomain(ctx, conn, host, fresh, req, io));
    }
  }
  io.onProgress?.('boot');
  try {
    await startAndWait(conn, host, dom, io, { justDefined: defined !== undefined });
  } catch (err) {
    const refused = serialLogRefusal(ctx, host, req.name, err);
    if (refused === undefined) {
      if (err instanceof LibvirtError && err.procedure === 'DomainCreateWithFlags') {
        // libvirt refused to start it, for something its XML carries (a bridge that does not
        // exist, a firmware the host lacks) or not: it never ran. Left defined, every retry
        // would adopt it and start it with that XML, whatever the configuration says by then.
        // Undefined; its volumes stay for the retry, which defines it from the configuration.
        log.warn({ err: err.message }, 'start refused; undefining the domain for the retry');
        await undefine(conn, dom, io).catch((undefining: unknown) => {
          log.warn({ err: undefining }, 'could not undefine the domain whose start was refused');
        });
      }
      throw err;
    }
    // The domain never ran and its XML names a log path libvirt cannot open: left defined, a
    // retry would adopt it and fail the same way after the operator fixed the setting.
    log.warn({ err: refused.message }, 'serial log refused; removing the instance it belonged to');
    await removeLocked(ctx, host, req.name, io).catch((removal: unknown) => {
      log.warn({ err: removal }, 'could not remove the instance whose serial log was refused');
    });
    throw refused;
  }
  if (defined === undefined) return readInstance(conn, host, dom, io);
  // Just started by this create: running (the wait said so), and no guest has an address a few
  // milliseconds after qemu launched it (its firmware is starting): provisioning, without
  // asking the agent, ARP and leases. The address comes by the queue's wait (docs/workers.md).
  return toInstance(host, dom.name, defined, 'provisioning');
}

/**
 * ERR_SERIAL_LOG when libvirt refused to start the domain because it cannot open the serial
 * log file (its directory missing, say): a setting of the host, not a passing fault.
 */
function serialLogRefusal(
  ctx: ProviderContext,
  host: string,
  name: string,
  err: unknown,
): Kvm2Error | undefined {
  if (!(err instanceof LibvirtError)) return undefined;
  // The file's name, not the whole path: a domain adopted from an earlier attempt names the
  // directory that was configured then.
  if (!err.message.includes(serialLogFile('', name))) return undefined;
  const index = ctx.config.hosts.findIndex((h) => h.name === host);
  const dir = ctx.config.hosts[index]?.serialLogDir ?? 'none';
  return new Kvm2Error(
    'ERR_SERIAL_LOG',
    `host '${host}' cannot write the serial log of '${name}' (kvm2.hosts[${index}].serialLogDir is ${JSON.stringify(dir)}): ${err.message}. Create that directory on the host, name another that libvirt can write, or set it to none`,
    { cause: err },
  );
}

async function makeDomain(
  ctx: ProviderContext,
  conn: LibvirtConnection,
  host: string,
  pool: NonnullStoragePool,
  req: ValidCreateRequest,
  io: Io,
  sent?: EarlyCalls,
): Promise<{ readonly dom: NonnullDomain; readonly metadata: InstanceMetadata }> {
  const hc = hostConfig(ctx, host);
  const log = ctx.logger.child({ host, instance: req.name });
  // The first calls go out now, unless the caller sent them already; the seed is built while
  // their answers travel.
  const first = sent ?? {
    ...earlyCalls(conn, pool, req.name, io),
    seedImage: seedMeanwhile(ctx, req),
  };
  let early: EarlyLookups | undefined = first;
  let earlySpace: EarlyCalls['space'] | undefined = first.space;
  let seed = await first.seedImage;
  const seedImage = (): Buffer => (seed ??= seedOf(ctx, req));
  // 3: nothing is written when the image and seed cannot fit. A fill asks afresh, with the
  // image's size, when it holds the fill lock; the early answer serves one check of a cached
  // image (it is at most a few look-ups old).
  const checkSpace = async (imageBytes: number, signal: AbortSignal | undefined): Promise<void> => {
    const asked = imageBytes === 0 ? earlySpace : undefined;
    earlySpace = undefined;
    const info = asked ?? guard(conn.call(StoragePoolGetInfo, { pool }, { signal }));
    const pending = imageBytes + seedImage().length;
    const { available } = await info;
    if (BigInt(pending) > available) {
      throw new Kvm2Error(
        'ERR_POOL_FULL',
        `pool '${hc.pool}' on host '${host}' has ${available} bytes free; image and seed need ${pending}`,
      );
    }
  };

  // 4–6. Reading a marker costs the daemon an iohelper process (~45 ms): a base this process
  // found complete before is not read again (image/cache.ts), and a cache hit is looked up
  // once. A miss meets the fill lock before anything else, so a create waiting for another's
  // fill has built no seed and asked the image server nothing; the holder checks the space.
  const findBase = async (): Promise<BaseImage> => {
    const cached = await findBaseImage(ctx, host, req.image, io);
    if (cached !== undefined) {
      await checkSpace(0, io.signal);
      return cached;
    }
    io.onProgress?.('download');
    return fillBaseImageOnce(ctx, host, req.image, {
      ...io,
      beforeFill: (imageBytes, signal) => checkSpace(imageBytes, signal),
    });
  };
  const remembered = rememberedBaseImage(ctx, host, req.image);
  const markerName = markerVolumeName(imageConfig(ctx, req.image));
  const diskGiB = req.diskGiB ?? ctx.config.defaults.diskGiB;
  const diskBytes = BigInt(diskGiB) * 2n ** 30n;
  const volumes = async (base: BaseImage, remembered = false): Promise<[string, string]> => {
    // An overlay smaller than its backing file truncates the disk the guest sees: the size is
    // known once the base is, and nothing of the instance is written yet.
    if (diskBytes < base.capacityBytes) {
      const field = req.diskGiB === undefined ? 'kvm2.defaults.diskGiB' : 'request.diskGiB';
      throw new Kvm2Error(
        'ERR_INVALID_REQUEST',
        `${field}: ${diskGiB} GiB is smaller than image '${req.image}' (${base.capacityBytes} bytes)`,
      );
    }
    io.onProgress?.('volumes');
    // The domain is absent (makeDomain runs only then): volumes of the instance's names are a
    // retry's, or someone else's. Both look-ups are answered before anything is written, and
    // one that finds a volume has the host's domains listed: a volume another domain uses is
    // refused untouched. Then the overlay is looked at: one that is not backed by this base is
    // refused before any seed is touched. Then its creation and the seed's go out together,
    // and, for a base this process remembers, look-ups that it and its marker are still there
    // (kvm2 writes the overlay itself: nothing else on the way to the define would notice the
    // base gone, and a base without marker may be another process's fill under way).
    const looked = early;
    early = undefined;
    const target: VolumeTarget = {
      conn,
      host,
      pool,
      poolName: hc.pool,
      name: req.name,
      signal: io.signal,
    };
    const [overlayVol, seedVol] = await Promise.all([
      looked?.overlay ?? lookupVolume(conn, pool, overlayVolumeName(req.name), io.signal),
      looked?.seed ?? lookupVolume(conn, pool, seedVolumeName(req.name), io.signal),
    ]);
    await refuseVolumesInUse(target, [overlayVol, seedVol]);
    const overlay = await overlayState(target, base, diskBytes, overlayVol);
    // All settle before any failure is thrown: nothing is left writing behind it.
    const [made, seeded, found, marked] = await Promise.allSettled([
      overlay.path ?? createOverlay(target, base, diskBytes),
      uploadSeed(target, seedImage(), seedVol),
      remembered ? lookupVolume(conn, pool, base.volumeName, io.signal) : undefined,
      remembered ? lookupVolume(conn, pool, markerName, io.signal) : undefined,
    ]);
    if (made.status === 'rejected') throw made.reason;
    if (seeded.status === 'rejected') throw seeded.reason;
    if (found.status === 'rejected') throw found.reason;
    if (marked.status === 'rejected') throw marked.reason;
    if (remembered && (found.value === undefined || marked.value === undefined)) {
      throw new BaseImageGone(base.volumeName);
    }
    return [made.value, seeded.value];
  };
  let overlayPath: string;
  let seedPath: string;
  if (remembered === undefined) {
    [overlayPath, seedPath] = await volumes(await findBase());
  } else {
    await checkSpace(0, io.signal);
    try {
      [overlayPath, seedPath] = await volumes(remembered, true);
    } catch (err) {
      if (!(err instanceof LibvirtError) && !(err instanceof BaseImageGone)) throw err;
      // The base this process had found complete was refused, or it or its marker is gone
      // (removed behind its back, say, and maybe being filled again by another process):
      // forget it and look at the host again, which meets the fill lock when it is not cached.
      // The overlay just made names the base's path, which a fill makes again: the next round
      // takes it.
      forgetBaseImage(ctx, host, req.image);
      log.warn({ err: err.message }, 'a remembered base image was refused; looking again');
      [overlayPath, seedPath] = await volumes(await findBase());
    }
  }

  // 7: the metadata goes in with the define, so the domain is never unowned. Its age (GC's
  // grace) counts from here, not from before a fill that may have taken many minutes.
  const createdAt = new Date().toISOString();
  const metadata: InstanceMetadata = { uid: req.uid, createdAt, tag: req.tag, image: req.image };
  const xml = buildDomainXml({
    name: req.name,
    vcpus: req.vcpus ?? ctx.config.defaults.vcpus,
    memoryMiB: req.memoryMiB ?? ctx.config.defaults.memoryMiB,
    domainType: hc.domainType,
    firmware: hc.firmware,
    cpuMode: hc.cpuMode === 'none' ? undefined : hc.cpuMode,
    overlayPath,
    seedPath,
    network: hc.network !== undefined ? { network: hc.network } : { bridge: hc.bridge },
    mac: macForUid(req.uid),
    serialLogPath: hc.serialLogDir === null ? null : serialLogFile(hc.serialLogDir, req.name),
    metadata,
  });
  const flags = schemaChecked.has(conn) ? 0 : DEFINE_VALIDATE;
  const { dom } = await conn.call(DomainDefineXMLFlags, { xml, flags }, io);
  schemaChecked.add(conn);
  return { dom, metadata };
}

function seedOf(ctx: ProviderContext, req: ValidCreateRequest): Buffer {
  return buildSeed({
    uid: req.uid,
    name: req.name,
    userData: req.userData,
    ...(req.networkConfig === undefined ? {} : { networkConfig: req.networkConfig }),
    vendorData: imageConfig(ctx, req.image).vendorData,
  });
}

/**
 * The seed, built once the calls just made are written: the connection sends calls made together
 * at the end of the tick (rpc-client.ts), so it waits for the loop's next turn. Undefined when it
 * cannot be built: makeDomain builds it again, and reports why, where it is needed.
 */
function seedMeanwhile(ctx: ProviderContext, req: ValidCreateRequest): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    setImmediate(() => {
      try {
        resolve(seedOf(ctx, req));
      } catch {
        resolve(undefined);
      }
    });
  });
}

async function lookupDomain(
  conn: LibvirtConnection,
  name: string,
  io: Io,
): Promise<NonnullDomain | null> {
  try {
    return (await conn.call(DomainLookupByName, { name }, io)).dom;
  } catch (err) {
    if (isNoDomain(err)) return null;
    throw err;
  }
}
