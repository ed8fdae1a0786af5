// Every error code in kvm2's source has a row in the one classification table, and every row
// of kvm2's own codes is used by the source: no code without a kind, no row for a code nothing
// throws or reports. (Kvm2Error's constructor already refuses a code without a row at compile
// time; this also covers codes compared against, and rows left behind.)
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TABLE } from '../../src/errors/table.js';

const repo = path.resolve(import.meta.dirname, '../..');
const PRODUCT = ['src', 'queues', 'workers', 'board', 'cli'];
const TABLE_FILES = new Set(['src/errors/kvm2-rows.ts', 'src/errors/other-rows.ts']);

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(repo, dir), { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(repo, path.join(e.parentPath, e.name)))
    .filter((f) => !TABLE_FILES.has(f));
}

/** code → the files that name it, as a string literal. */
async function codesInSource(): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const dir of PRODUCT) {
    for (const file of await sourceFiles(dir)) {
      const text = await readFile(path.join(repo, file), 'utf8');
      for (const [, code] of text.matchAll(/['"`](ERR_[A-Z0-9_]+)['"`]/g)) {
        found.set(code!, [...(found.get(code!) ?? []), file]);
      }
    }
  }
  return found;
}

const kvm2Codes = new Set(
  ERROR_TABLE.filter((r) => r.source === 'kvm2').map((r) => String(r.match)),
);
const nodeCodes = new Set(
  ERROR_TABLE.filter((r) => r.source === 'node').map((r) => String(r.match)),
);

describe('error codes and the classification table', () => {
  it('has a row for every code the source names', async () => {
    const found = await codesInSource();
    expect(found.size).toBeGreaterThan(40);
    const without = [...found.keys()].filter((c) => !kvm2Codes.has(c) && !nodeCodes.has(c));
    expect(without.map((c) => `${c} (${found.get(c)?.join(', ')})`)).toEqual([]);
  });

  it('has no row for a kvm2 code the source never names', async () => {
    const found = await codesInSource();
    expect([...kvm2Codes].filter((c) => !found.has(c))).toEqual([]);
  });
});
