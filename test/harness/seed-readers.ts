// The seed tests' independent readers of an ISO image: isoinfo, bsdtar and cloud-init's own
// Python (Debian's package), each run as a separate process, and the fixed time the seeds are
// built at.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { SeedError } from '../../src/provider/seed/errors.js';

const execFileAsync = promisify(execFile);
export const PYTHON = '/usr/bin/python3'; // Debian's, with cloud-init; not the pyenv one on PATH
export const NOW = new Date('2025-01-01T00:00:00Z');

export async function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await execFileAsync(cmd, args, {
    maxBuffer: 64 * 1024 * 1024,
    ...(env === undefined ? {} : { env: { ...process.env, ...env } }),
  });
  return stdout;
}

export async function extract(iso: string, name: string, extension: '-R' | '-J'): Promise<Buffer> {
  const { stdout } = await execFileAsync('isoinfo', [extension, '-x', `/${name}`, '-i', iso], {
    encoding: 'buffer',
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

/** Names in an `isoinfo -l` listing, "." and ".." left out. */
export function listedNames(listing: string): string[] {
  return listing
    .split('\n')
    .map((line) => /\]\s+(\S+)\s*$/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== '.' && name !== '..')
    .sort();
}

/** Unpacks with bsdtar into a new directory; returns name → bytes. */
export async function bsdtarFiles(iso: string, into: string): Promise<Map<string, Buffer>> {
  await mkdir(into);
  await run('bsdtar', ['-xf', iso, '-C', into]);
  await chmod(into, 0o755); // the image's root is r-x (a read-only medium); let cleanup work
  const files = new Map<string, Buffer>();
  for (const name of (await readdir(into)).sort()) {
    files.set(name, await readFile(path.join(into, name)));
  }
  return files;
}

export const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

// cloud-init 22.4, as the NoCloud source reads a mounted seed: read_seeded for meta-data,
// user-data and vendor-data; pathprefix2dict + _merge_new_seed (DataSourceNoCloud) for
// network-config; UserDataProcessor to split MIME multipart into parts.
export const READ_SEEDS_PY = `
import hashlib, json, sys
from cloudinit import helpers, user_data, util
from cloudinit.sources import DataSourceNoCloud

args = json.loads(sys.argv[1])
paths = helpers.Paths({'cloud_dir': args['cloudDir']})

def parts(raw):
    msg = user_data.UserDataProcessor(paths).process(raw)
    return [
        {'type': p.get_content_type(), 'filename': p.get_filename(),
         'payload': p.get_payload(decode=True).decode('utf-8')}
        for p in msg.walk() if not p.is_multipart()
    ]

out = []
for seed in args['seeds']:
    md, ud, vd = util.read_seeded(seed['dir'] + '/', timeout=None)
    found = util.pathprefix2dict(seed['dir'], required=['user-data', 'meta-data'],
                                 optional=['vendor-data', 'network-config'])
    merged = DataSourceNoCloud._merge_new_seed({'meta-data': {}}, found)
    out.append({
        'metaData': md,
        'userDataSha256': hashlib.sha256(ud).hexdigest(),
        'vendorDataSha256': None if vd is None else hashlib.sha256(vd).hexdigest(),
        'vendorParts': parts(vd),
        'userParts': parts(ud) if seed['splitUserData'] else None,
        'networkConfig': merged.get('network-config'),
    })
print(json.dumps(out))
`;

/** The SeedError `fn` throws; anything else it throws is rethrown, and no throw fails. */
export function seedErrorOf(fn: () => unknown): SeedError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SeedError) return err;
    throw err;
  }
  throw new Error('expected a SeedError');
}
