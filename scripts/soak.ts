// `npm run soak`: the chaos soak's long form by hand (issue #15; the short form runs in the
// suite as test/integration/soak.test.ts). Needs what `npm run setup` starts (the Redis on
// 6379 holds nothing but a key prefix's scope; the soak's own Redis is a Sentinel group). Options:
//   --seed N  --hosts H  --workers W  --requests N  --names M  --faults F  --every MS
// Prints progress, then the table; exits 1 when there is any violation.
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { build } from '../test/harness/build.js';
import { formatSoakReport, runSoak } from '../test/harness/soak.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    hosts: { type: 'string', default: '3' },
    workers: { type: 'string', default: '3' },
    requests: { type: 'string', default: '2000' },
    names: { type: 'string', default: '24' },
    faults: { type: 'string', default: '100' },
    every: { type: 'string', default: '150' },
  },
});
const number = (name: keyof typeof values): number => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`--${name} must be a whole number, got ${values[name]}`);
  return n;
};
const seed = values.seed === undefined ? randomInt(2 ** 31) : number('seed');
build();
console.log(`[soak] seed ${seed} (replay with --seed ${seed})`);
const report = await runSoak({
  seed,
  hosts: number('hosts'),
  workers: number('workers'),
  requests: number('requests'),
  names: number('names'),
  faults: number('faults'),
  requestEveryMs: number('every'),
  log: (line) => console.log(`[soak] ${line}`),
});
console.log(formatSoakReport(report));
// Exit now: connections ioredis made while the soak's Redis was failing over may still be
// retrying toward the group the soak has stopped.
process.exit(report.violations.length === 0 ? 0 : 1);
