// vitest globalSetup: the compiled tree worker and CLI processes start from (test/harness/build.ts).
import { build } from './build.js';

export function setup(): void {
  const started = performance.now();
  const files = build();
  process.stdout.write(
    `[global-build] ${files} sources transpiled in ${Math.round(performance.now() - started)} ms\n`,
  );
}
