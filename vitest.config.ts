import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A private redis-server for the run (REDIS_URL overrides it).
    globalSetup: ['test/harness/global-redis.ts'],
    // Integration tests share one libvirtd and one Redis: files run one after another so a
    // benchmark-like test never starves another of the machine's two cores.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: '.cache/vitest-results.json' }]],
  },
});
