// kvm2 as a dependency of an upstream application (issue #16): `npm pack` makes the tarball, a
// scratch application outside the repository installs it with `npm install <tarball>`, its
// TypeScript file (examples/client/app.ts, the README's example) imports `kvm2/client`, passes
// `tsc --strict`, and runs against a real worker: create, waitFor, the result read and
// acknowledged through a consumer group, delete. What the client's entry pulls in is read from
// the installed package: none of the worker runtime, the board or the libvirt client.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, copyFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../harness/build.js';
import { markdownTable } from '../harness/markdown.js';
import { startQueueFleet, TEST_DEFAULTS, type QueueFleet } from '../harness/queue-fleet.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

const run = promisify(execFile);
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const EXAMPLE = path.join(ROOT, 'examples/client/app.ts');

let fleet: QueueFleet;
let worker: WorkerProcess | undefined;
let configPath = '';
let scratch = '';
let app = '';
let tarball = '';

/** npm, with the environment of a user's shell rather than of the `npm test` around us. */
function npm(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')),
  );
  return run('npm', args, { cwd, env, maxBuffer: 16 << 20, timeout: 300_000 });
}

async function tsc(project: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await run(process.execPath, [TSC, '-p', project], {
      cwd: path.dirname(project),
      timeout: 120_000,
    });
    return { code: 0, output: stdout };
  } catch (err) {
    const { code, stdout, stderr } = err as { code?: number; stdout?: string; stderr?: string };
    return { code: code ?? 1, output: `${stdout ?? ''}${stderr ?? ''}` };
  }
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'kvm2-upstream-'));
  const packed = await npm(['pack', '--pack-destination', scratch, '--silent'], ROOT);
  tarball = path.join(scratch, packed.stdout.trim().split('\n').pop() ?? '');

  // The application: a directory of its own, nowhere near the repository.
  app = path.join(scratch, 'app');
  await run('mkdir', ['-p', path.join(app, 'src')]);
  await writeFile(
    path.join(app, 'package.json'),
    JSON.stringify({ name: 'upstream-app', private: true, type: 'module' }, null, 2),
  );
  await writeFile(
    path.join(app, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          strict: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          types: ['node'],
          outDir: 'build',
          rootDir: 'src',
        },
        include: ['src'],
      },
      null,
      2,
    ),
  );
  await copyFile(EXAMPLE, path.join(app, 'src/app.ts'));
  await npm(
    ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball, '@types/node@^24'],
    app,
  );

  fleet = await startQueueFleet('pkg');
  // The tiny guest runs no agent: its create would wait the whole address timeout.
  configPath = fleet.writeConfig({ defaults: { ...TEST_DEFAULTS, addressTimeout: '2s' } });
  worker = await startWorkerProcess(configPath);
}, 600_000);

afterAll(async () => {
  await worker?.stop();
  await fleet?.cleanup();
  if (scratch !== '') await rm(scratch, { recursive: true, force: true });
}, 120_000);

describe('the client as a package', () => {
  it("the README's example is examples/client/app.ts, as it is", async () => {
    const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
    const example = blocks.find((block) => block.includes("from 'kvm2/client'"));
    expect(example, "a ```ts block of README.md importing 'kvm2/client'").toBeDefined();
    expect(example).toBe(await readFile(EXAMPLE, 'utf8'));
  });

  it('installs from the tarball, with type declarations: the example passes tsc --strict', async () => {
    const installed = JSON.parse(
      await readFile(path.join(app, 'node_modules/kvm2/package.json'), 'utf8'),
    ) as { exports: Record<string, unknown> };
    expect(Object.keys(installed.exports)).toContain('./client');
    const checked = await tsc(path.join(app, 'tsconfig.json'));
    expect(checked.output).toBe('');
    expect(checked.code).toBe(0);
  }, 180_000);

  it('the declarations are the real types: a wrong call fails the check, naming the field', async () => {
    const project = path.join(scratch, 'misuse');
    await run('mkdir', ['-p', path.join(project, 'src')]);
    await run('ln', ['-s', path.join(app, 'node_modules'), path.join(project, 'node_modules')]);
    await copyFile(path.join(app, 'package.json'), path.join(project, 'package.json'));
    await copyFile(path.join(app, 'tsconfig.json'), path.join(project, 'tsconfig.json'));
    const wrong = "await client.create({ host: 'h1', name: 'x', image: 'tiny', vcpus: 'two' });";
    await writeFile(
      path.join(project, 'src/misuse.ts'),
      [
        "import { Kvm2Client } from 'kvm2/client';",
        "const client = new Kvm2Client({ redisUrl: 'redis://127.0.0.1:6379' });",
        wrong,
        '',
      ].join('\n'),
    );
    const checked = await tsc(path.join(project, 'tsconfig.json'));
    expect(checked.code).not.toBe(0);
    // The error is at the field (line 3, the column of `vcpus`), and it is the only one.
    expect(checked.output.trim()).toMatch(
      new RegExp(`^src/misuse\\.ts\\(3,${wrong.indexOf('vcpus') + 1}\\): error TS2322:`),
    );
    expect(
      checked.output
        .trim()
        .split('\n')
        .filter((l) => l.includes('error TS')),
    ).toHaveLength(1);
  }, 180_000);

  it('runs against a real worker: create, waitFor, the result through a consumer group, delete', async () => {
    const checked = await tsc(path.join(app, 'tsconfig.json'));
    expect(checked.code).toBe(0);
    const name = fleet.name('app');
    const { stdout } = await run(process.execPath, [path.join(app, 'build/app.js')], {
      cwd: app,
      env: {
        ...process.env,
        KVM2_CONFIG: configPath,
        KVM2_HOST: 'h1',
        KVM2_IMAGE: fleet.image,
        KVM2_NAME: name,
      },
      timeout: 240_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^create succeeded: (running|provisioning) /);
    expect(lines[1]).toMatch(/^group my-app: create succeeded \d+-\d+$/);
    expect(lines[2]).toBe('delete succeeded: deleted');

    // Acknowledged: the group holds nothing pending for the application's consumer.
    const pending = (await fleet.scope.redis.xpending(
      `${fleet.scope.prefix}:results`,
      'my-app',
    )) as [number, ...unknown[]];
    expect(pending[0]).toBe(0);
    expect(await fleet.domains()).toEqual([]);
    expect(await fleet.volumes()).toEqual([]);
  }, 300_000);

  it("another language's consumer: docs/results.md's redis-cli commands read, check and acknowledge the app's results", async () => {
    const { hostname, port } = new URL(fleet.scope.url);
    const cli = async (...args: string[]): Promise<string> => {
      const { stdout } = await run('redis-cli', ['-h', hostname, '-p', port, ...args]);
      // redis-cli exits 0 on an error reply: it is in the output.
      if (/^(\(error\)|error:)/.test(stdout.trim()))
        throw new Error(`redis-cli ${args.join(' ')}: ${stdout}`);
      return stdout.trim();
    };
    const stream = `${fleet.scope.prefix}:results`;
    const fields = await documentedFields();
    // The consumer's read: '>' for what it has not been given, '0' for what it has not acked.
    const readGroup = async (id: '>' | '0'): Promise<Record<string, [string, string[]][]> | null> =>
      JSON.parse(
        await cli(
          '--json',
          'XREADGROUP',
          'GROUP',
          'wire',
          'wire-1',
          'COUNT',
          '100',
          'STREAMS',
          stream,
          id,
        ),
      ) as Record<string, [string, string[]][]> | null;

    expect(await cli('XGROUP', 'CREATE', stream, 'wire', '0', 'MKSTREAM')).toBe('OK');
    const reply = await readGroup('>');
    const entries = reply?.[stream] ?? [];
    const results = entries
      .map(([id, flat]) => ({ id, fields: pairs(flat) }))
      .filter((entry) => !entry.fields.has('type'));
    // The app's create and delete, each with its final result, among them.
    const finals = results.filter((r) => r.fields.get('outcome') !== 'retrying');
    const ops = finals
      .filter((r) => r.fields.get('instanceId') === `h1/${fleet.name('app')}`)
      .map((r) => `${r.fields.get('op')} ${r.fields.get('outcome')}`);
    expect(ops).toEqual(['create succeeded', 'delete succeeded']);
    // Every field of every result is in the document's table, and holds what its type says.
    for (const result of results) {
      for (const [name, value] of result.fields) {
        const check = fields.get(name);
        expect(check, `field ${name} of ${result.id}: not in docs/results.md`).toBeDefined();
        expect(check?.(value), `field ${name}=${value} of ${result.id}`).toBe(true);
      }
      for (const always of ['jobId', 'op', 'outcome', 'attempt', 'timestamp']) {
        expect(result.fields.has(always), `${always} of ${result.id}`).toBe(true);
      }
    }

    expect(Number(await cli('XACK', stream, 'wire', ...entries.map(([id]) => id)))).toBe(
      entries.length,
    );
    const pending = JSON.parse(await cli('--json', 'XPENDING', stream, 'wire')) as [
      number,
      ...unknown[],
    ];
    expect(pending[0]).toBe(0);
    const again = await readGroup('0');
    expect(again?.[stream]).toEqual([]);
  });

  it('kvm2/client pulls in neither the worker runtime, the board nor the libvirt client', async () => {
    const bundle = await build({
      absWorkingDir: path.join(app, 'node_modules/kvm2'),
      entryPoints: ['dist/queues/public.js'],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      logLevel: 'silent',
    });
    const modules = Object.keys(bundle.metafile.inputs);
    const packages = new Set(
      Object.values(bundle.metafile.inputs).flatMap((input) =>
        input.imports
          .filter((i) => i.external)
          .map((i) => i.path.replace(/^(@[^/]+\/[^/]+|[^@/][^/]*).*$/, '$1')),
      ),
    );
    expect(modules).toContain('dist/queues/client.js');
    // The one libvirt module: the URI parser the configuration's hosts are checked with.
    const libvirt = modules.filter((m) => m.startsWith('dist/src/libvirt/'));
    expect(libvirt).toEqual(['dist/src/libvirt/transport/uri.js']);
    expect(modules.filter((m) => /^dist\/(workers|board|cli)\//.test(m))).toEqual([]);
    const foreign = [...packages].filter((p) => !p.startsWith('node:'));
    // Not bullmq: the client adds its jobs with kvm2's own scripts (queues/enqueue.ts).
    expect(foreign.sort()).toEqual(
      ['@opentelemetry/api', 'fast-xml-parser', 'ioredis', 'yaml', 'zod'].sort(),
    );
  });
});

function pairs(flat: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(flat[i] ?? '', flat[i + 1] ?? '');
  return map;
}

/** Backticked words of a cell: `a`, `b` → ['a', 'b']. */
function ticked(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
}

/** The rows of the first table after the line `heading` of a docs/ page (harness/markdown.ts). */
async function tableAfter(file: string, heading: string): Promise<string[][]> {
  return markdownTable(await readFile(path.join(ROOT, file), 'utf8'), heading);
}

/**
 * docs/results.md's field table as checks: each field's type column, read the way a reader in
 * another language would. A type this does not know fails the test, so the table and this
 * stay in step.
 */
async function documentedFields(): Promise<Map<string, (value: string) => boolean>> {
  const states = (
    await tableAfter(
      'docs/states.md',
      "kvm2's states, and what an upstream application does with each:",
    )
  ).flatMap((row) => ticked(row[0] ?? ''));
  expect(states).toContain('running');
  const checks = new Map<string, (value: string) => boolean>();
  for (const [fieldCell = '', type = ''] of await tableAfter('docs/results.md', '## Fields')) {
    const [field = ''] = ticked(fieldCell);
    checks.set(field, checkOf(type, states));
  }
  expect([...checks.keys()]).toContain('jobId');
  return checks;
}

function checkOf(type: string, states: readonly string[]): (value: string) => boolean {
  const longest = /≤ ([\d,]+) characters/.exec(type);
  const max = longest === null ? Infinity : Number((longest[1] ?? '').replace(/,/g, ''));
  if (type.includes('docs/states.md')) {
    const allowed = new Set([...states, ...ticked(type)]);
    return (v) => allowed.has(v);
  }
  if (type.startsWith('one of')) {
    const allowed = new Set(ticked(type));
    return (v) => allowed.has(v);
  }
  if (type.startsWith('integer')) {
    const least = type.includes('≥ 1') ? 1 : 0;
    return (v) => /^\d+$/.test(v) && Number(v) >= least;
  }
  if (type === 'instance id')
    return (v) =>
      /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\/[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(v);
  if (type === 'code') return (v) => /^ERR_[A-Z0-9_]+$/.test(v);
  if (type === 'IPv4 address') return (v) => /^(\d{1,3}\.){3}\d{1,3}$/.test(v);
  if (type === 'W3C traceparent')
    return (v) => /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(v);
  if (type.startsWith('string')) return (v) => v.length <= max;
  throw new Error(`docs/results.md: a type this test cannot read: ${type}`);
}
