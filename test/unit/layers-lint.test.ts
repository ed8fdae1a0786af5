// The layer rules hold because the linter enforces them (docs/architecture.md). Each rule is
// shown failing: a scratch copy of the product tree gets one planted file per violation, and
// the real `eslint` (the project's own config) must report each with the rule meant for it,
// while a planted file that follows the rules passes.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '../..');
const COPIED = ['src', 'queues', 'workers', 'board', 'cli', 'scripts/lint'];
const CONFIG = ['eslint.config.js', 'tsconfig.json', 'package.json'];

/** Planted files: path in the copy, its text, and the rule that must report it (or none). */
const PLANTS: Record<string, { text: string; rule: string | null }> = {
  'src/libvirt/planted-upward.ts': {
    text: "import { formatInstanceId } from '../provider/core/ids.js';\nexport const f = formatInstanceId;\n",
    rule: 'import-x/no-restricted-paths',
  },
  'src/libvirt/transport/planted-upward.ts': {
    text: "import { LibvirtError } from '../errors.js';\nexport const e = LibvirtError;\n",
    rule: 'import-x/no-restricted-paths',
  },
  'queues/planted-upward.ts': {
    text: "import { JobRuns } from '../workers/run/cancellation.js';\nexport const r = JobRuns;\n",
    rule: 'import-x/no-restricted-paths',
  },
  'src/provider/planted-bullmq.ts': {
    text: "import { Queue } from 'bullmq';\nexport const q = Queue;\n",
    rule: 'no-restricted-imports',
  },
  'src/libvirt/planted-ioredis.ts': {
    text: "import type { Redis } from 'ioredis';\nexport type R = Redis;\n",
    rule: 'no-restricted-imports',
  },
  'src/provider/core/planted-cycle-a.ts': {
    text: "import { b } from './planted-cycle-b.js';\nexport const a = (): number => b() + 1;\n",
    rule: 'import-x/no-cycle',
  },
  'src/provider/core/planted-cycle-b.ts': {
    text: "import { a } from './planted-cycle-a.js';\nexport const b = (): number => a() - 1;\n",
    rule: 'import-x/no-cycle',
  },
  // src/provider/image already imports src/provider/xml; this closes xml → image → xml through
  // files that do not import each other, so only the folder rule can see it.
  'src/provider/xml/planted-folder-cycle.ts': {
    text: "import { deleteVolume } from '../image/volumes.js';\nexport const d = deleteVolume;\n",
    rule: 'kvm2/no-folder-cycle',
  },
  // The control: a downward import across layers and folders is fine.
  'src/provider/xml/planted-downward.ts': {
    text: "import { VirErr } from '../../libvirt/error-codes.js';\nexport const v = VirErr.NO_DOMAIN;\n",
    rule: null,
  },
};

interface EslintMessage {
  ruleId: string | null;
  message: string;
}
interface EslintResult {
  filePath: string;
  messages: EslintMessage[];
}

const scratches: string[] = [];
const results = new Map<string, EslintMessage[]>();

/** Lints `plants` in a fresh copy of the tree; the messages by planted file. */
async function lintPlanted(plants: string[]): Promise<void> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'kvm2-lint-'));
  scratches.push(scratch);
  for (const dir of COPIED) {
    await cp(path.join(repo, dir), path.join(scratch, dir), { recursive: true });
  }
  for (const file of CONFIG) await cp(path.join(repo, file), path.join(scratch, file));
  await symlink(path.join(repo, 'node_modules'), path.join(scratch, 'node_modules'), 'dir');
  for (const file of plants) await writeFile(path.join(scratch, file), PLANTS[file]!.text);
  const eslint = path.join(repo, 'node_modules/eslint/bin/eslint.js');
  // eslint exits 1 when it reports errors; the JSON on stdout is what is read.
  const { stdout } = await run(process.execPath, [eslint, '--format', 'json', ...plants], {
    cwd: scratch,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((err: { stdout?: string; code?: number }) => {
    if (err.code !== 1 || err.stdout === undefined) throw err;
    return { stdout: err.stdout };
  });
  for (const r of JSON.parse(stdout) as EslintResult[]) {
    results.set(path.relative(scratch, r.filePath), r.messages);
  }
}

beforeAll(async () => {
  // The control gets a copy of its own: the planted violations add edges to the graph that
  // would make any import between those folders close a cycle.
  const files = Object.keys(PLANTS);
  await Promise.all([
    lintPlanted(files.filter((f) => PLANTS[f]!.rule !== null)),
    lintPlanted(files.filter((f) => PLANTS[f]!.rule === null)),
  ]);
}, 180_000);

afterAll(async () => {
  for (const dir of scratches) await rm(dir, { recursive: true, force: true });
});

describe('npm run lint enforces the layers', () => {
  for (const [file, { rule }] of Object.entries(PLANTS)) {
    it(rule === null ? `${file} passes` : `${file} fails with ${rule}`, () => {
      const messages = results.get(file);
      expect(messages, `eslint did not lint ${file}`).toBeDefined();
      if (rule === null) {
        expect(messages).toEqual([]);
      } else {
        expect(messages?.map((m) => m.ruleId)).toContain(rule);
      }
    });
  }

  it('names the folders of the cycle it found', () => {
    const message = results
      .get('src/provider/xml/planted-folder-cycle.ts')
      ?.find((m) => m.ruleId === 'kvm2/no-folder-cycle')?.message;
    expect(message).toContain('src/provider/xml → src/provider/image → src/provider/xml');
  });
});
