// The compiled tree the tests start real processes from (worker, CLI, the deploy entry): node
// on plain JavaScript, as production runs it, not tsx transforming every module at each start
// (a worker is ready in about 1 s instead of 1.7–2 s here). globalSetup makes it afresh for
// every run with esbuild, file by file, no bundling (about 0.2 s); the type check is
// tsc's, in `npm test` beside the tests (scripts/test.mjs), and `npm run build` stays tsc.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BUILD_DIR = path.join(ROOT, '.cache/test-dist');
const SOURCES = ['src', 'queues', 'workers', 'board', 'cli'];

/** The built JavaScript of a source file, e.g. `cli/main.ts` → `.cache/test-dist/cli/main.js`. */
export function built(source: string): string {
  return path.join(BUILD_DIR, source.replace(/\.ts$/, '.js'));
}

function sourcesIn(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesIn(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Transpiles every source into BUILD_DIR, which it empties first; returns the file count. */
export function build(): number {
  const entryPoints = SOURCES.flatMap((dir) => sourcesIn(path.join(ROOT, dir)));
  fs.rmSync(BUILD_DIR, { recursive: true, force: true });
  buildSync({
    entryPoints,
    outdir: BUILD_DIR,
    outbase: ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'error',
  });
  // queues/script.ts reads the Lua scripts beside its module.
  fs.cpSync(path.join(ROOT, 'queues/lua'), path.join(BUILD_DIR, 'queues/lua'), { recursive: true });
  return entryPoints.length;
}
