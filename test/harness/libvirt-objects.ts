// Throwaway libvirt objects for integration tests, made with virsh and removed afterwards:
// an isolated network (a bridge with no forward mode and no host address, so no packet leaves
// it) and a dir pool. Names carry a random suffix so runs never collide.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { uniqueName, virsh } from './virsh.js';

export interface TestNetwork {
  readonly name: string;
  remove(): Promise<void>;
}

export async function isolatedNetwork(prefix = 'kvm2-net'): Promise<TestNetwork> {
  const name = uniqueName(prefix).slice(0, 40);
  const bridge = `kv${Math.random().toString(36).slice(2, 10)}`;
  const file = path.join(os.tmpdir(), `${name}.xml`);
  fs.writeFileSync(file, `<network><name>${name}</name><bridge name='${bridge}'/></network>`);
  try {
    await virsh(['net-define', file]);
    await virsh(['net-start', name]);
  } finally {
    fs.rmSync(file, { force: true });
  }
  return {
    name,
    remove: async () => {
      await virsh(['net-destroy', name]).catch(() => undefined);
      await virsh(['net-undefine', name]).catch(() => undefined);
    },
  };
}

export interface TestPool {
  readonly name: string;
  /** Deletes every volume in the pool (starting it again if a test stopped it), then the pool. */
  remove(): Promise<void>;
}

/** A started dir pool over `target`, a directory the test made and removes itself. */
export async function dirPool(prefix: string, target: string): Promise<TestPool> {
  const name = uniqueName(prefix).slice(0, 40);
  await virsh(['pool-define-as', name, 'dir', '--target', target]);
  await virsh(['pool-start', name]);
  return {
    name,
    remove: async () => {
      await virsh(['pool-start', name]).catch(() => undefined);
      for (const v of await poolVolumes(name).catch(() => [])) {
        await virsh(['vol-delete', '--pool', name, v]).catch(() => undefined);
      }
      await virsh(['pool-destroy', name]).catch(() => undefined);
      await virsh(['pool-undefine', name]).catch(() => undefined);
    },
  };
}

/** Volume names in a pool, sorted. */
export async function poolVolumes(pool = 'default'): Promise<string[]> {
  await virsh(['pool-refresh', pool]);
  const out = await virsh(['vol-list', pool]);
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean)
    .sort();
}

/** The image cache's volumes in the default pool now (bases and markers). */
export async function poolBases(): Promise<string[]> {
  return (await poolVolumes()).filter((v) => v.startsWith('kvm2-base-'));
}

/** Removes the bases (and markers) made since `before`: the image cache keeps them otherwise. */
export async function removeBasesSince(before: readonly string[]): Promise<void> {
  for (const v of await poolBases()) {
    if (!before.includes(v))
      await virsh(['vol-delete', '--pool', 'default', v]).catch(() => undefined);
  }
}

export async function domainExists(name: string): Promise<boolean> {
  const names = (await virsh(['list', '--all', '--name'])).split('\n').map((s) => s.trim());
  return names.includes(name);
}
