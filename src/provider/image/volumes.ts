// The libvirt side of the image cache: volume look-ups where "no such volume" is an answer,
// small volumes written and read whole (the marker), a pool refresh that waits out libvirt's
// "asynchronous jobs running", and deletion that waits out "still in use". And which domains
// use a volume, asked before deleting one: libvirt itself lets a volume in use be deleted.
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import { isLibvirtCode } from '../../libvirt/errors.js';
import {
  ConnectListAllDomains,
  DomainGetXMLDesc,
  StoragePoolRefresh,
  StorageVolCreateXML,
  StorageVolDelete,
  StorageVolDownload,
  StorageVolGetPath,
  StorageVolLookupByName,
  StorageVolUpload,
  type NonnullDomain,
  type NonnullStoragePool,
  type NonnullStorageVol,
} from '../../libvirt/protocol.gen.js';
import { XmlError, childrenNamed, firstChild, readXml, type XmlElement } from '../xml/types.js';
import { buildVolumeXml } from '../xml/volume.js';

/** How long a refresh or a delete keeps trying while libvirt says the pool or volume is busy. */
const BUSY_RETRY_MS = 30_000;

/** The volume, or undefined when the pool has none of that name. */
export async function lookupVolume(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  name: string,
  signal: AbortSignal,
): Promise<NonnullStorageVol | undefined> {
  try {
    return (await conn.call(StorageVolLookupByName, { pool, name }, { signal })).vol;
  } catch (err) {
    if (isLibvirtCode(err, VirErr.NO_STORAGE_VOL)) return undefined;
    throw err;
  }
}

/**
 * The first `maxBytes` of a volume (StorageVolDownload stops there, whatever the volume holds);
 * undefined when it is gone (removed as debris by another process meanwhile).
 */
export async function readSmallVolume(
  conn: LibvirtConnection,
  vol: NonnullStorageVol,
  maxBytes: number,
  signal: AbortSignal,
): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  const args = { vol, offset: 0n, length: BigInt(maxBytes), flags: 0 };
  try {
    for await (const chunk of conn.download(StorageVolDownload, args, { signal })) {
      parts.push(chunk);
    }
  } catch (err) {
    if (isLibvirtCode(err, VirErr.NO_STORAGE_VOL)) return undefined;
    throw err;
  }
  return Buffer.concat(parts);
}

/** A raw volume holding exactly `data`. */
export async function writeSmallVolume(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  name: string,
  data: Buffer,
  signal: AbortSignal,
): Promise<NonnullStorageVol> {
  return (await writeVolume(conn, pool, name, data, signal, false)).vol;
}

/**
 * writeSmallVolume, and the volume's path, asked before the upload: libvirt refreshes the
 * whole pool after every upload, holding the pool's lock meanwhile, and a path asked after it
 * waits for that (~40 ms seen on the test host).
 */
export async function writeSmallVolumeWithPath(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  name: string,
  data: Buffer,
  signal: AbortSignal,
): Promise<{ readonly vol: NonnullStorageVol; readonly path: string }> {
  const { vol, path = '' } = await writeVolume(conn, pool, name, data, signal, true);
  return { vol, path };
}

async function writeVolume(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  name: string,
  data: Buffer,
  signal: AbortSignal,
  withPath: boolean,
): Promise<{ readonly vol: NonnullStorageVol; readonly path?: string }> {
  const xml = buildVolumeXml({ name, capacityBytes: BigInt(data.length), format: 'raw' });
  const { vol } = await conn.call(StorageVolCreateXML, { pool, xml, flags: 0 }, { signal });
  // Sent first: calls leave in the order made, so the daemon answers it before the upload.
  const path = withPath ? conn.call(StorageVolGetPath, { vol }, { signal }) : undefined;
  path?.catch(() => undefined);
  await uploadBytes(conn, vol, data, signal);
  return path === undefined ? { vol } : { vol, path: (await path).name };
}

/** Writes `data` over the start of an existing volume. */
export async function uploadBytes(
  conn: LibvirtConnection,
  vol: NonnullStorageVol,
  data: Buffer,
  signal: AbortSignal,
): Promise<void> {
  const args = { vol, offset: 0n, length: BigInt(data.length), flags: 0 };
  await conn.upload(StorageVolUpload, args, Readable.from([data]), { signal });
}

/**
 * Re-reads the pool, so libvirt probes what was uploaded (a raw-created volume holding qcow2
 * bytes becomes qcow2). libvirt refuses with INTERNAL_ERROR "pool has asynchronous jobs
 * running" while any volume of the pool is being built (storage_driver.c storagePoolRefresh),
 * e.g. an overlay of another create: that passes, so wait and try again.
 */
export async function refreshPool(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  signal: AbortSignal,
): Promise<void> {
  await whileBusy(VirErr.INTERNAL_ERROR, signal, () =>
    conn.call(StoragePoolRefresh, { pool, flags: 0 }, { signal }),
  );
}

/**
 * Deletes a volume; false when it was already gone. OPERATION_INVALID ("still in use", "still
 * being allocated") is libvirt finishing a stream or a build on it: wait and try again.
 */
export async function deleteVolume(
  conn: LibvirtConnection,
  vol: NonnullStorageVol,
  signal: AbortSignal,
): Promise<boolean> {
  try {
    await whileBusy(VirErr.OPERATION_INVALID, signal, () =>
      conn.call(StorageVolDelete, { vol, flags: 0 }, { signal }),
    );
    return true;
  } catch (err) {
    if (isLibvirtCode(err, VirErr.NO_STORAGE_VOL)) return false;
    throw err;
  }
}

async function whileBusy<T>(
  busyCode: number,
  signal: AbortSignal,
  attempt: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + BUSY_RETRY_MS;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      return await attempt();
    } catch (err) {
      if (!isLibvirtCode(err, busyCode) || Date.now() + delay > deadline) throw err;
    }
    await sleep(delay, undefined, { signal });
  }
}

/**
 * For each of `volumes` (volumes of the pool `poolName`), the names of the domains whose disks
 * use it, sorted; empty when none does. One listing of the host's domains answers for all, made
 * only when `volumes` is not empty. Any failure is thrown: the caller cannot tell what is free,
 * so it must not delete.
 */
export async function domainsUsing(
  conn: LibvirtConnection,
  poolName: string,
  volumes: readonly NonnullStorageVol[],
  signal: AbortSignal,
): Promise<string[][]> {
  if (volumes.length === 0) return [];
  const [users, paths] = await Promise.all([
    listVolumeUsers(conn, signal),
    Promise.all(volumes.map((vol) => conn.call(StorageVolGetPath, { vol }, { signal }))),
  ]);
  return volumes.map((vol, i) => {
    const names = new Set([
      ...(users.get(pathKey(paths[i]?.name ?? '')) ?? []),
      ...(users.get(poolVolumeKey(poolName, vol.name)) ?? []),
    ]);
    return [...names].sort();
  });
}

// virDomainGetXMLFlags: VIR_DOMAIN_XML_INACTIVE, the definition the next boot uses.
const XML_INACTIVE = 2;

/**
 * The host's domains by the volumes their disks name (keys from pathKey and poolVolumeKey):
 * each disk's source and, in a running domain's live XML, the backing chain libvirt reports
 * under it. A running domain is read twice, live and as defined: `virsh attach-disk --config`
 * adds a disk to the next boot only. A domain gone since the listing uses nothing; any other failure is thrown (the caller
 * cannot tell what is free, so it must not delete).
 */
async function listVolumeUsers(
  conn: LibvirtConnection,
  signal: AbortSignal,
): Promise<Map<string, Set<string>>> {
  const { domains } = await conn.call(
    ConnectListAllDomains,
    { needResults: 1, flags: 0 },
    { signal },
  );
  // Quick reads all sent at once, as listByTag sends its metadata reads.
  const burst = { signal, burst: true };
  const readXmlDesc = async (dom: NonnullDomain, flags: number): Promise<string | undefined> => {
    try {
      return (await conn.call(DomainGetXMLDesc, { dom, flags }, burst)).xml;
    } catch (err) {
      if (isLibvirtCode(err, VirErr.NO_DOMAIN)) return undefined;
      throw err;
    }
  };
  const users = new Map<string, Set<string>>();
  await Promise.all(
    domains.flatMap((dom) =>
      (dom.id === -1 ? [0] : [0, XML_INACTIVE]).map(async (flags) => {
        const xml = await readXmlDesc(dom, flags);
        if (xml === undefined) return;
        for (const key of diskSourceKeys(xml)) {
          const names = users.get(key) ?? new Set<string>();
          names.add(dom.name);
          users.set(key, names);
        }
      }),
    ),
  );
  return users;
}

const pathKey = (file: string): string => `path\0${path.posix.normalize(file)}`;
const poolVolumeKey = (pool: string, name: string): string => `volume\0${pool}\0${name}`;

/**
 * The volumes a domain XML's disks name (https://libvirt.org/formatdomain.html#hard-drives-
 * floppy-disks-cdroms): `<source file=…>` and `<source dev=…>` by path, `<source pool=…
 * volume=…>` by pool and name, in the disk and in each `<backingStore>` under it.
 */
function diskSourceKeys(domainXml: string): string[] {
  const root = readXml(domainXml);
  if (root.name !== 'domain') {
    throw new XmlError('ERR_XML_MALFORMED', `expected a <domain> document, got <${root.name}>`);
  }
  const devices = firstChild(root, 'devices');
  const keys: string[] = [];
  const visit = (element: XmlElement): void => {
    const source = firstChild(element, 'source');
    if (source !== undefined) {
      for (const attribute of ['file', 'dev']) {
        const file = source.attributes.get(attribute);
        if (file !== undefined && file !== '') keys.push(pathKey(file));
      }
      const pool = source.attributes.get('pool');
      const volume = source.attributes.get('volume');
      if (pool !== undefined && volume !== undefined) keys.push(poolVolumeKey(pool, volume));
    }
    const backing = firstChild(element, 'backingStore');
    if (backing !== undefined) visit(backing);
  };
  for (const disk of devices === undefined ? [] : childrenNamed(devices, 'disk')) visit(disk);
  return keys;
}
