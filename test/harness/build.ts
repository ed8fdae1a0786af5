// The compiled tree the tests start real processes from (worker, CLI, the deploy entry), as
// production runs them: node on tsc's output, not tsx transforming at every start. `npm test`
// builds it in its first step (`build:test`, which is also the type check); globalSetup builds
// it again when a source is newer, so `npx vitest run` alone never starts a stale worker.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BUILD_DIR = path.join(ROOT, '.cache/test-dist');
/** tsc writes every output on each build: this one's mtime is when the tree was built. */
const STAMP = path.join(BUILD_DIR, 'src/cli/main.js');
const SOURCES = ['src', 'queues', 'workers'];

/** The built JavaScript of a source file, e.g. `src/cli/main.ts` → `.cache/test-dist/src/cli/main.js`. */
export function built(source: string): string {
  return path.join(BUILD_DIR, source.replace(/\.ts$/, '.js'));
}

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

function stampTime(): number {
  try {
    return fs.statSync(STAMP).mtimeMs;
  } catch {
    return -1;
  }
}

/** Builds unless the stamp is newer than every source; returns whether it built. */
export function ensureBuilt(): boolean {
  const newest = Math.max(...SOURCES.map((d) => newestSource(path.join(ROOT, d))));
  if (stampTime() >= newest) return false;
  execFileSync(
    process.execPath,
    [
      path.join(ROOT, 'node_modules/typescript/bin/tsc'),
      ...['-p', 'tsconfig.build.json', '--outDir', BUILD_DIR, '--sourceMap', 'false'],
    ],
    { cwd: ROOT, stdio: 'inherit' },
  );
  return true;
}
