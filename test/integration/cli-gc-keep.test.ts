// `kvm2 gc --keep` with an id on a host no configuration names: it would keep nothing, and the
// instance meant (its host mistyped) would be deleted by the round. Refused before anything is
// enqueued, naming the id. The real CLI against the real Redis (a fresh key prefix).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliRig, inProcess } from '../harness/cli-rig.js';
import type { RedisScope } from '../harness/redis.js';

const rig = cliRig();
let scope: RedisScope;
let goodConfig: string;

beforeAll(async () => {
  ({ scope, goodConfig } = await rig.start());
}, 60_000);

afterAll(() => rig.stop());

it('refuses a --keep id on a host that is not configured, enqueuing nothing', async () => {
  const keysBefore = (await scope.keys()).sort();
  const run = await inProcess([
    'gc',
    '--config',
    goodConfig,
    '--tag',
    'cli',
    '--keep',
    'h1/a,hl/b',
  ]);
  expect(run).toMatchObject({ code: 1, stdout: '' });
  expect(run.stderr).toBe("kvm2: --keep hl/b: host 'hl' is not in the configuration (hosts: h1)\n");
  expect((await scope.keys()).sort()).toEqual(keysBefore);
});
