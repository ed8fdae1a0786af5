// The cloud-init NoCloud seed (SPEC §6): an ISO 9660 volume labelled `cidata` holding
// meta-data, user-data, optional network-config and vendor-data. Built in memory: nothing
// touches the disk, so nothing is left behind, and user-data (which may hold secrets) never
// appears in an error: errors name the field and its size only.
// cloud-init's NoCloud source: https://docs.cloud-init.io/en/latest/reference/datasources/nocloud.html
import { randomBytes } from 'node:crypto';
import { quoteForError, SeedError } from './errors.js';
import { buildIso9660, type IsoFile } from './iso9660.js';
import { vendorPartProblem, type VendorDataPart } from './vendor-part.js';

export type { VendorDataPart } from './vendor-part.js';

/** The volume label cloud-init's NoCloud source looks for (it also accepts `CIDATA`). */
export const SEED_LABEL = 'cidata';

export interface SeedInput {
  /** meta-data `instance-id`: cloud-init reruns its per-instance modules when it changes. */
  readonly uid: string;
  /** meta-data `local-hostname`. */
  readonly name: string;
  /** Written byte for byte as the `user-data` file; a string is written as UTF-8. */
  readonly userData: Buffer | string;
  /** Network configuration (v1 or v2 YAML), written as given when present. */
  readonly networkConfig?: string;
  /** Parts added to vendor-data after the guest-agent part. */
  readonly vendorData?: readonly VendorDataPart[];
}

export interface SeedOptions {
  /** Every timestamp in the image. Default: now. */
  readonly now?: Date;
  /** The vendor-data MIME boundary. Default: random. Fix it (and `now`) for identical bytes. */
  readonly boundary?: string;
}

/**
 * The seed image as bytes, ready to upload as a volume and attach as a read-only disk.
 * Throws SeedError (kind `permanent`) when the input cannot make a seed.
 */
export function buildSeed(input: SeedInput, options: SeedOptions = {}): Buffer {
  const files: IsoFile[] = [
    { name: 'meta-data', data: Buffer.from(buildMetaData(input.uid, input.name), 'utf8') },
    { name: 'user-data', data: toBytes(input.userData) },
    {
      name: 'vendor-data',
      data: Buffer.from(buildVendorData(input.vendorData ?? [], options.boundary), 'utf8'),
    },
  ];
  if (input.networkConfig !== undefined) {
    files.push({ name: 'network-config', data: Buffer.from(input.networkConfig, 'utf8') });
  }
  return buildIso9660(files, {
    volumeId: SEED_LABEL,
    applicationId: 'KVM2 CLOUD-INIT SEED',
    ...(options.now === undefined ? {} : { timestamp: options.now }),
  });
}

function toBytes(userData: Buffer | string): Buffer {
  if (typeof userData === 'string') return Buffer.from(userData, 'utf8');
  if (Buffer.isBuffer(userData)) return userData;
  throw new SeedError('ERR_SEED_INVALID', 'userData', 'must be a Buffer or a string');
}

/**
 * meta-data as YAML. Both values are double-quoted with every character outside printable
 * ASCII escaped, so no value can add a key, turn into a number or boolean (YAML 1.1, which
 * cloud-init's PyYAML speaks, reads `no` as false), or carry a character PyYAML refuses.
 */
export function buildMetaData(uid: string, name: string): string {
  return `instance-id: ${yamlQuoted(uid, 'uid')}\nlocal-hostname: ${yamlQuoted(name, 'name')}\n`;
}

function yamlQuoted(value: string, field: string): string {
  if (value.length === 0) throw new SeedError('ERR_SEED_INVALID', field, 'must not be empty');
  if (/\p{Cs}/u.test(value)) {
    throw new SeedError('ERR_SEED_INVALID', field, 'holds a lone UTF-16 surrogate');
  }
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (code >= 0x20 && code <= 0x7e) out += char;
    else if (code <= 0xffff) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/**
 * The part that makes stock cloud images report their address through the guest agent: a
 * vendor script, which cloud-init's `scripts_vendor` module runs at first boot whatever
 * user-data says. Not cloud-config: cloud-init merges user-data's cloud-config over
 * vendor-data's key by key, so a user-data with its own `packages` or `runcmd` would drop the
 * agent's (docs/seed.md shows that merge on a real guest). The script installs the agent only
 * when the image lacks it (no package-index refresh on images that ship it, no network needed
 * for them), then enables and starts it unless it runs already (Debian's udev rule starts it
 * when its port appears). Its output reaches the console and
 * /var/log/cloud-init-output.log, prefixed `kvm2-vendor-data:`.
 */
const GUEST_AGENT_PART: VendorDataPart = {
  contentType: 'text/x-shellscript',
  filename: 'kvm2-guest-agent.sh',
  content: [
    '#!/bin/sh',
    '# kvm2: the guest agent reports the address (docs/seed.md).',
    'say() { echo "kvm2-vendor-data: $*"; }',
    'if command -v qemu-ga >/dev/null 2>&1; then',
    '  say "qemu-guest-agent is installed"',
    'elif command -v apt-get >/dev/null 2>&1; then',
    '  export DEBIAN_FRONTEND=noninteractive',
    '  apt-get install -y qemu-guest-agent || { apt-get update && apt-get install -y qemu-guest-agent; }',
    'elif command -v dnf >/dev/null 2>&1; then',
    '  dnf install -y qemu-guest-agent',
    'elif command -v yum >/dev/null 2>&1; then',
    '  yum install -y qemu-guest-agent',
    'elif command -v zypper >/dev/null 2>&1; then',
    '  zypper --non-interactive install qemu-guest-agent',
    'elif command -v apk >/dev/null 2>&1; then',
    '  apk add qemu-guest-agent',
    'fi',
    'command -v qemu-ga >/dev/null 2>&1 || { say "qemu-guest-agent could not be installed"; exit 1; }',
    'if command -v systemctl >/dev/null 2>&1; then',
    '  if systemctl is-active --quiet qemu-guest-agent; then say "qemu-guest-agent is running"; exit 0; fi',
    '  systemctl enable qemu-guest-agent >/dev/null 2>&1 || true',
    '  systemctl start qemu-guest-agent',
    'elif command -v rc-service >/dev/null 2>&1; then',
    '  rc-update add qemu-guest-agent default && rc-service qemu-guest-agent start',
    'fi',
    'say "qemu-guest-agent started"',
    '',
  ].join('\n'),
};

/** RFC 2046 §5.1.1 bchars, without the space (which may not end a boundary anyway). */
const BOUNDARY_PATTERN = /^[0-9A-Za-z'()+_,\-./:=?]{1,70}$/;

// vendor-data, MIME multipart (RFC 2046 §5.1) as cloud-init's own `make-mime` writes it:
//   Content-Type: multipart/mixed; boundary="B"
//   MIME-Version: 1.0
//   <blank>
//   --B                            one block per part: its headers, a blank line, the body
//   Content-Type: text/cloud-config; charset="us-ascii"
//   ...
//   --B--
// Line ends are LF, as Python's email package writes them and reads either way.
export function buildVendorData(extra: readonly VendorDataPart[], boundary?: string): string {
  const parts = [GUEST_AGENT_PART, ...extra].map((part, index) => encodePart(part, index - 1));
  if (boundary !== undefined) {
    if (!BOUNDARY_PATTERN.test(boundary)) {
      throw new SeedError(
        'ERR_SEED_INVALID',
        'boundary',
        `${quoteForError(boundary)} is not 1..70 RFC 2046 boundary characters`,
      );
    }
    if (parts.some((part) => part.includes(boundary))) {
      throw new SeedError(
        'ERR_SEED_BOUNDARY_IN_CONTENT',
        'boundary',
        'occurs inside a vendor-data part; choose another',
      );
    }
    return assemble(parts, boundary);
  }
  for (;;) {
    const random = `kvm2-${randomBytes(16).toString('hex')}`;
    if (!parts.some((part) => part.includes(random))) return assemble(parts, random);
  }
}

function assemble(parts: readonly string[], boundary: string): string {
  const head = `Content-Type: multipart/mixed; boundary="${boundary}"\nMIME-Version: 1.0\n\n`;
  return `${head}${parts.map((part) => `--${boundary}\n${part}\n`).join('')}--${boundary}--\n`;
}

/** One part's headers and body. ASCII bodies go as 7bit text, others as base64 of UTF-8. */
function encodePart(part: VendorDataPart, extraIndex: number): string {
  const field = extraIndex < 0 ? 'vendorData' : `vendorData[${extraIndex}]`;
  const problem = vendorPartProblem(part);
  if (problem !== undefined) {
    throw new SeedError(
      'ERR_SEED_INVALID',
      `${field}.${problem.field}`,
      `${quoteForError(problem.value)} ${problem.message}`,
    );
  }
  // Printable ASCII lines pass as they are; anything else (CR, NUL, UTF-8) would be at the
  // mercy of line-end and charset handling, so it goes as base64.
  const sevenBit = /^[\t\n\x20-\x7e]*$/.test(part.content);
  const body = sevenBit
    ? part.content
    : (Buffer.from(part.content, 'utf8')
        .toString('base64')
        .match(/.{1,76}/g)
        ?.join('\n') ?? '');
  const headers = [
    `Content-Type: ${part.contentType}; charset="${sevenBit ? 'us-ascii' : 'utf-8'}"`,
    'MIME-Version: 1.0',
    `Content-Transfer-Encoding: ${sevenBit ? '7bit' : 'base64'}`,
    ...(part.filename === undefined
      ? []
      : [`Content-Disposition: attachment; filename="${part.filename}"`]),
  ];
  return `${headers.join('\n')}\n\n${body}`;
}
