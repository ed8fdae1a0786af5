// kvm2's overlay bytes (src/provider/image/qcow2-overlay.ts) judged by qemu's own tools, on
// local files: `qemu-img check` finds no error, `qemu-img info` reads what it reads of the
// overlay `qemu-img create -b` makes, and `qemu-io` reads the base through it and writes into it
// without touching the base.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OVERLAY_BYTES,
  qcow2Backing,
  qcow2NamesBacking,
  qcow2Overlay,
} from '../../src/provider/image/qcow2-overlay.js';

const run = promisify(execFile);
const GiB = 2n ** 30n;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm2-qcow2-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function info(path: string): Promise<Record<string, unknown>> {
  const { stdout } = await run('qemu-img', ['info', '--output=json', '-U', path]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

async function qemuIo(path: string, command: string): Promise<string> {
  const { stdout } = await run('qemu-io', ['-f', 'qcow2', '-c', command, path]);
  return stdout;
}

describe('the overlay kvm2 writes', () => {
  it.each([
    ['a qcow2 base, 10 GiB', 'qcow2', 10n * GiB],
    ['a raw base, 1 GiB', 'raw', GiB],
    ['a qcow2 base, an odd size', 'qcow2', 3n * GiB + 512n],
  ] as const)('over %s: qemu-img reads it as it reads its own', async (_what, format, size) => {
    const base = join(dir, `base-${format}-${size}`);
    await run('qemu-img', ['create', '-q', '-f', format, base, '1G']);
    const ours = join(dir, `ours-${format}-${size}.qcow2`);
    const bytes = qcow2Overlay({ virtualBytes: size, backingPath: base, backingFormat: format });
    expect(bytes.length).toBe(OVERLAY_BYTES);
    await writeFile(ours, bytes);
    const theirs = join(dir, `theirs-${format}-${size}.qcow2`);
    await run('qemu-img', [
      'create',
      '-q',
      '-f',
      'qcow2',
      '-b',
      base,
      '-F',
      format,
      theirs,
      String(size),
    ]);

    const { stdout } = await run('qemu-img', ['check', '--output=json', ours]);
    const check = JSON.parse(stdout) as Record<string, unknown>;
    expect(check).toMatchObject({ 'check-errors': 0, format: 'qcow2' });
    expect(check).not.toHaveProperty('leaks');
    expect(check).not.toHaveProperty('corruptions');

    const fields = (i: Record<string, unknown>): Record<string, unknown> => ({
      'virtual-size': i['virtual-size'],
      'cluster-size': i['cluster-size'],
      'backing-filename': i['backing-filename'],
      'backing-filename-format': i['backing-filename-format'],
      'format-specific': i['format-specific'],
      'dirty-flag': i['dirty-flag'],
    });
    const mine = await info(ours);
    expect(fields(mine)).toEqual(fields(await info(theirs)));
    expect(mine['virtual-size']).toBe(Number(size));
    expect(mine['backing-filename']).toBe(base);

    // Both headers read back by the parser the adopt path uses.
    expect(qcow2Backing(bytes)).toEqual({ path: base, format });
    expect(qcow2Backing(await readFile(theirs))).toEqual({ path: base, format });
  });

  it('qcow2NamesBacking reads the backing file fields qemu-img writes, network ones too', async () => {
    const plain = join(dir, 'plain.qcow2');
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', plain, '1G']);
    const nbd = join(dir, 'nbd.qcow2');
    await run('qemu-img', [
      'create',
      '-q',
      '-f',
      'qcow2',
      '-u',
      '-b',
      'nbd://127.0.0.1:9',
      '-F',
      'raw',
      nbd,
      '1G',
    ]);
    const head = async (file: string): Promise<Buffer> => (await readFile(file)).subarray(0, 80);
    expect(qcow2NamesBacking(await head(plain))).toBe(false);
    expect(qcow2NamesBacking(await head(nbd))).toBe(true);
    expect(
      qcow2NamesBacking(
        qcow2Overlay({ virtualBytes: GiB, backingPath: plain, backingFormat: 'qcow2' }),
      ),
    ).toBe(true);
    expect(qcow2NamesBacking(Buffer.alloc(80))).toBe(false); // no qcow2 at all
  });

  it('reads the base through it, and takes writes without touching the base', async () => {
    const base = join(dir, 'patterned.raw');
    await run('qemu-img', ['create', '-q', '-f', 'raw', base, '1G']);
    await run('qemu-io', ['-f', 'raw', '-c', 'write -P 0xab 0 1M', base]);
    const overlay = join(dir, 'patterned-overlay.qcow2');
    await writeFile(
      overlay,
      qcow2Overlay({ virtualBytes: 2n * GiB, backingPath: base, backingFormat: 'raw' }),
    );
    expect(await qemuIo(overlay, 'read -P 0xab 0 1M')).toMatch(/read 1048576\/1048576 bytes/);
    expect(await qemuIo(overlay, 'write -P 0xcd 512k 128k')).toMatch(/wrote 131072\/131072/);
    // Past the base's end, in the overlay's own size.
    expect(await qemuIo(overlay, 'write -P 0xef 1536M 64k')).toMatch(/wrote 65536\/65536/);
    expect(await qemuIo(overlay, 'read -P 0xcd 512k 128k')).toMatch(/read 131072\/131072/);
    expect(await qemuIo(overlay, 'read -P 0xab 0 512k')).toMatch(/read 524288\/524288/);
    expect(await qemuIo(overlay, 'read -P 0xef 1536M 64k')).toMatch(/read 65536\/65536/);
    await run('qemu-img', ['check', overlay]);
    const unchanged = await run('qemu-io', ['-f', 'raw', '-c', 'read -P 0xab 0 1M', base]);
    expect(unchanged.stdout).toMatch(/read 1048576\/1048576/);
  });

  it('refuses what qemu could not open, naming it', () => {
    const spec = { virtualBytes: GiB, backingPath: '/var/lib/x', backingFormat: 'raw' } as const;
    expect(() => qcow2Overlay({ ...spec, virtualBytes: 0n })).toThrow(/overlay size 0: must be/);
    expect(() => qcow2Overlay({ ...spec, virtualBytes: 1000n })).toThrow(/multiple of 512/);
    expect(() => qcow2Overlay({ ...spec, virtualBytes: 2n ** 60n })).toThrow(/L1 entries/);
    expect(() => qcow2Overlay({ ...spec, backingPath: 'a'.repeat(1024) })).toThrow(
      /backing path of 1024 bytes/,
    );
    expect(qcow2Backing(Buffer.alloc(OVERLAY_BYTES))).toBeNull();
  });
});
