// The chaos soak's short form (issue #15; the long form is `npm run soak`): three namespace
// hosts, two worker processes, a Sentinel group, 150 random create/delete/gc requests over 12
// names while at least 10 faults are injected (workers SIGKILLed and SIGTERMed and restarted,
// an sshd stopped, a libvirtd restarted, a Sentinel failover, a worker's Redis connections
// cut). harness/soak.ts says what it checks; every violation fails the test. The seed is
// printed; KVM2_SOAK_SEED=<n> replays the same plan and fault schedule (the timing still varies).
import { randomInt } from 'node:crypto';
import { expect, it } from 'vitest';
import { formatSoakReport, runSoak } from '../harness/soak.js';

const envSeed = process.env['KVM2_SOAK_SEED'];
const SEED = envSeed === undefined ? randomInt(2 ** 31) : Number(envSeed);

it('150 requests across 10+ faults: every name as last asked, nothing made twice or left over, one final result per job', async () => {
  process.stdout.write(`[soak] seed ${SEED} (replay with KVM2_SOAK_SEED=${SEED})\n`);
  const report = await runSoak({
    seed: SEED,
    hosts: 3,
    workers: 2,
    requests: 150,
    names: 12,
    faults: 10,
    requestEveryMs: 250,
    log: (line) => process.stdout.write(`[soak] ${line}\n`),
  });
  process.stdout.write(`${formatSoakReport(report)}\n`);
  const total = (m: Readonly<Record<string, number>>): number =>
    Object.values(m).reduce((a, b) => a + b, 0);
  expect(total(report.requests)).toBeGreaterThanOrEqual(150);
  expect(total(report.faults)).toBeGreaterThanOrEqual(10);
  expect(report.violations).toEqual([]);
}, 600_000);
