// vitest globalSetup: the compiled tree is there and newer than every source (test/harness/build.ts).
import { ensureBuilt } from './build.js';

export function setup(): void {
  if (ensureBuilt())
    process.stdout.write('[global-build] sources changed since the last build: rebuilt\n');
}
