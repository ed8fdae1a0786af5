// Each connection's storage pool handles, by pool name. A handle is the pool's name and UUID,
// and libvirt finds a pool by its UUID for every call made on the pool (a volume's own calls go
// by the pool's name): it stays good for as long as the pool is defined. A create that knows its
// pool's handle sends its first volume look-ups beside the domain's, one dependent round trip
// fewer (bench/provider's listing, docs/provider.md). A pool undefined and defined again under
// the same name has a new UUID: the old handle's calls fail with NO_STORAGE_POOL, and the caller
// forgets it and looks the pool up again (isStalePool). A new connection starts with none.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import { isLibvirtCode } from '../../libvirt/errors.js';
import { StoragePoolLookupByName, type NonnullStoragePool } from '../../libvirt/protocol.gen.js';

const handles = new WeakMap<LibvirtConnection, Map<string, NonnullStoragePool>>();

/** The handle this connection last looked up for pool `name`, if any. */
export function knownPool(conn: LibvirtConnection, name: string): NonnullStoragePool | undefined {
  return handles.get(conn)?.get(name);
}

/** Looks pool `name` up on `conn` and remembers its handle for the connection's next calls. */
export async function lookupPool(
  conn: LibvirtConnection,
  name: string,
  options: { readonly signal?: AbortSignal | undefined },
): Promise<NonnullStoragePool> {
  const { pool } = await conn.call(StoragePoolLookupByName, { name }, options);
  let byName = handles.get(conn);
  if (byName === undefined) handles.set(conn, (byName = new Map<string, NonnullStoragePool>()));
  byName.set(name, pool);
  return pool;
}

/** Forgets pool `name`'s handle on `conn` (it went stale: isStalePool). */
export function forgetPool(conn: LibvirtConnection, name: string): void {
  handles.get(conn)?.delete(name);
}

/** libvirt's answer to a call made with a handle of a pool that is no longer defined. */
export function isStalePool(err: unknown): boolean {
  return isLibvirtCode(err, VirErr.NO_STORAGE_POOL);
}
