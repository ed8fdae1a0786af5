// The builds (tsc for dist/ and dist-bench/) emit JavaScript only; queues/script.ts reads the
// Lua scripts beside its own module, so each build copies queues/lua/ into its output.
// Usage: node scripts/copy-lua.mjs <outDir>
import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';

const out = process.argv[2];
if (out === undefined) {
  console.error('usage: node scripts/copy-lua.mjs <outDir>');
  process.exit(2);
}
const root = path.resolve(import.meta.dirname, '..');
const target = path.resolve(root, out, 'queues/lua');
rmSync(target, { recursive: true, force: true });
cpSync(path.join(root, 'queues/lua'), target, { recursive: true });
