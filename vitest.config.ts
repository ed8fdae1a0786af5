import { defineConfig } from 'vitest/config';

const REDIS_ONLY = [
  'test/integration/redis-locks.test.ts',
  'test/integration/redis-coalesce.test.ts',
  'test/integration/lua-script.test.ts',
  'test/integration/gc-race.test.ts',
  'test/integration/board-requests.test.ts',
  'test/integration/queues.test.ts',
  'test/integration/bullmq-add.test.ts',
  'test/integration/bullmq-complete.test.ts',
  'test/integration/qcow2-overlay.test.ts',
  'test/integration/queue-results.test.ts',
  'test/integration/queue-redis-unreachable.test.ts',
  'test/integration/seed-readers.test.ts',
  'test/integration/seed-file-names.test.ts',
  'test/integration/seed-build.test.ts',
  'test/integration/instance-event-publish.test.ts',
  'test/integration/retention.test.ts',
];

const shared = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
} as const;

export default defineConfig({
  test: {
    // scripts/test.mjs names another report for the unit run on Node 22 (test-count.mjs adds
    // the two).
    reporters: [
      'default',
      ['json', { outputFile: process.env['KVM2_VITEST_REPORT'] ?? '.cache/vitest-results.json' }],
    ],
    projects: [
      // Pure code: files in parallel on both cores, in the first group. Projects of one group
      // must share a worker count, so the serial integration files are a second group.
      {
        test: {
          ...shared,
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      // Files that reach only Redis (each under a key prefix of its own) and local files, never
      // libvirtd: in the first group with the unit files, in parallel like them.
      {
        test: {
          ...shared,
          name: 'redis',
          include: REDIS_ONLY,
          maxWorkers: 2,
          globalSetup: ['test/harness/global-redis.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: REDIS_ONLY,
          // A private redis-server for the run (REDIS_URL overrides it); the compiled tree
          // that worker and CLI processes are started from.
          globalSetup: ['test/harness/global-redis.ts', 'test/harness/global-build.ts'],
          // One libvirtd, one pool, one Redis: files that list the pool's volumes or restart
          // the daemon cannot share it with another file, so they run one after another.
          fileParallelism: false,
          // One worker for all the files, its modules (bullmq, ioredis, OpenTelemetry) loaded
          // once rather than again for every file.
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
