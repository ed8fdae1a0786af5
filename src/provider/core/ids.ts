// Names kvm2 gives things (SPEC §3): instance ids `<host>/<name>`, uids, and the volumes it
// makes, all prefixed `kvm2-` so GC can tell them from anyone else's.
import { createHash, randomUUID } from 'node:crypto';
import { Kvm2Error, type Kvm2ErrorOptions } from '../../errors/error.js';

/** RFC 1123 label: what a libvirt domain, a hostname and a cloud-init local-hostname all take. */
export const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Every volume kvm2 makes starts with this; volumes without it are never touched. */
export const KVM2_PREFIX = 'kvm2-';

/** A uid as newUid makes it: a lowercase RFC 9562 UUID, 8-4-4-4-12 hex digits. */
export const UID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface InstanceRef {
  readonly host: string;
  readonly name: string;
}

export class InvalidInstanceIdError extends Kvm2Error {
  declare readonly code: 'ERR_INVALID_INSTANCE_ID';
  override name = 'InvalidInstanceIdError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_INVALID_INSTANCE_ID', message, options);
  }
}

const NAME_RULE =
  'lowercase letters, digits and dashes, 1 to 63, not starting or ending with a dash';

export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

/** Quoted for a message, and cut short: ids come from job data, which can be anything. */
function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/** `<host>/<name>` to its parts; both must be DNS labels. */
export function parseInstanceId(id: string): InstanceRef {
  const parts = id.split('/');
  if (parts.length !== 2) {
    throw new InvalidInstanceIdError(`instance id ${quote(id)} is not <host>/<name>`);
  }
  const [host = '', name = ''] = parts;
  if (!isValidName(host)) {
    throw new InvalidInstanceIdError(
      `instance id ${quote(id)}: host ${quote(host)} is not a DNS label (${NAME_RULE})`,
    );
  }
  if (!isValidName(name)) {
    throw new InvalidInstanceIdError(
      `instance id ${quote(id)}: name ${quote(name)} is not a DNS label (${NAME_RULE})`,
    );
  }
  return { host, name };
}

export function formatInstanceId(host: string, name: string): string {
  const id = `${host}/${name}`;
  parseInstanceId(id);
  return id;
}

/** The name of an instance's lock (create, delete and the sweep take it; a job run holds it). */
export function instanceLockName(id: string): string {
  return `instance:${id}`;
}

/**
 * A new instance uid: `crypto.randomUUID()`, a version-4 UUID from the CSPRNG (122 random
 * bits), lowercase `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`. It becomes cloud-init's instance-id,
 * so a repeat of the same create keeps the guest's first-boot state.
 */
export function newUid(): string {
  return randomUUID();
}

export function isValidUid(uid: string): boolean {
  return UID_PATTERN.test(uid);
}

function checkedName(name: string): string {
  if (!isValidName(name)) {
    throw new InvalidInstanceIdError(
      `instance name ${quote(name)} is not a DNS label (${NAME_RULE})`,
    );
  }
  return name;
}

/** The instance's copy-on-write disk, backed by the image's base volume. */
export function overlayVolumeName(name: string): string {
  return `${KVM2_PREFIX}${checkedName(name)}.qcow2`;
}

/** The instance's cloud-init NoCloud seed. */
export function seedVolumeName(name: string): string {
  return `${KVM2_PREFIX}${checkedName(name)}-seed.iso`;
}

/**
 * The file libvirt writes the instance's serial console to, in the host's serialLogDir, which
 * by default is where the qemu driver writes `<domain>.log` for every domain. A domain's name
 * may hold anything but `/`, so any file name ending in `.log` can be some domain's log
 * (`web.serial.log` is that of a domain named `web.serial`): this one does not end in `.log`.
 */
export function serialLogFile(dir: string, name: string): string {
  return `${dir === '/' ? '' : dir}/${checkedName(name)}.serial`;
}

export type InstanceVolumeRole = 'overlay' | 'seed';

/**
 * Which instance a volume belongs to, for GC; undefined for any other volume. Base images
 * carry a 64-hex digest in their name, longer than a label, so they never match.
 */
export function instanceVolumeOwner(
  volume: string,
): { readonly name: string; readonly role: InstanceVolumeRole } | undefined {
  if (!volume.startsWith(KVM2_PREFIX)) return undefined;
  const rest = volume.slice(KVM2_PREFIX.length);
  const seed = /^(.+)-seed\.iso$/.exec(rest)?.[1];
  if (seed !== undefined && isValidName(seed)) return { name: seed, role: 'seed' };
  const overlay = /^(.+)\.qcow2$/.exec(rest)?.[1];
  if (overlay !== undefined && isValidName(overlay)) return { name: overlay, role: 'overlay' };
  return undefined;
}

/**
 * The MAC address of an instance's NIC, made from its uid: a retried create defines the same
 * NIC, and an address the guest agent reports can be told to be the NIC's (a guest may list any
 * interfaces it likes). 0x52: locally administered and unicast (and not 0xfe, which libvirt
 * keeps for the host's side of a tap); then 40 bits of the uid's hash. 24 bits (libvirt's own
 * 52:54:00 and three bytes, as kvm2 made them before) meet a collision among ~5,000 guests on
 * one bridge one time in two; 40 bits, one in ~90,000 at that count.
 */
export function macForUid(uid: string): string {
  const hash = createHash('sha256').update(uid).digest();
  return ['52', ...[0, 1, 2, 3, 4].map((i) => hex2(hash[i] ?? 0))].join(':');
}

/** The MAC kvm2 gave instances before macForUid's 40 bits: their addresses are still read. */
export function legacyMacForUid(uid: string): string {
  const hash = createHash('sha256').update(uid).digest();
  return ['52', '54', '00', ...[0, 1, 2].map((i) => hex2(hash[i] ?? 0))].join(':');
}

function hex2(byte: number): string {
  return byte.toString(16).padStart(2, '0');
}
