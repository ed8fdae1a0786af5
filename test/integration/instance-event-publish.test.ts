// Publishing instance events against the real Redis (queues/events.ts and its script): a change
// is published once, only what differs from the last published state, only by the holder of
// the host's watch lease; and readers of the results stream tell events from results.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  parseInstanceEvent,
  publishInstanceChange,
  publishedInstances,
  type InstanceEventEntry,
} from '../../queues/events.js';
import {
  ackResults,
  ensureResultsGroup,
  readResults,
  readStream,
} from '../../queues/result-readers.js';
import { appendResult, parseResult } from '../../queues/results.js';
import { resultsKey } from '../../queues/names.js';
import type { HostChange } from '../../src/provider/operations/watch-host.js';
import type { Observation } from '../../src/provider/operations/observe.js';
import { result } from '../harness/queue-requests.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
const lease = { redisKey: '', token: 'token-of-the-holder' };
let host = 'h0';

beforeAll(async () => {
  scope = await redisScope('event-publish');
  lease.redisKey = `${scope.prefix}:lock:watch:test`;
});

afterAll(async () => {
  await scope.cleanup();
});

let hostCount = 0;
beforeEach(async () => {
  host = `h${++hostCount}`; // each test its own host: its own state hash
  await scope.redis.set(lease.redisKey, lease.token, 'PX', 60_000);
});

function seen(name: string, over: Partial<Observation> = {}, event = 'started'): HostChange {
  const observation: Observation = {
    host,
    name,
    instanceId: `${host}/${name}`,
    uid: 'uid-1',
    state: 'running',
    address: '192.0.2.10',
    fresh: false,
    startingUp: false,
    ...over,
  };
  return { host, name, cause: { event, detail: 'booted' }, observation };
}

function gone(name: string): HostChange {
  return { host, name, cause: { event: 'undefined', detail: 'removed' } };
}

async function events(): Promise<InstanceEventEntry[]> {
  const entries = await scope.redis.xrange(resultsKey(scope.prefix), '-', '+');
  return entries
    .flatMap(([id, fields]) => parseInstanceEvent(id, fields) ?? [])
    .filter((e) => e.host === host);
}

const publish = (change: HostChange) =>
  publishInstanceChange(scope.redis, scope.prefix, lease, change, 1_700_000_000_000);

describe('publishing an instance change', () => {
  it('publishes a state once; the same again is no change; a new one carries the previous', async () => {
    expect(await publish(seen('a'))).toMatchObject({ published: true });
    expect(await publish(seen('a'))).toEqual({ published: false, reason: 'unchanged' });
    expect(
      await publish(seen('a', { state: 'paused', address: undefined }, 'suspended')),
    ).toMatchObject({ published: true });

    const [first, second, ...rest] = await events();
    expect(rest).toEqual([]);
    expect(first).toMatchObject({
      type: 'event',
      instanceId: `${host}/a`,
      host,
      uid: 'uid-1',
      state: 'running',
      address: '192.0.2.10',
      event: 'started',
      detail: 'booted',
      timestamp: 1_700_000_000_000,
    });
    expect(first?.previous).toBeUndefined();
    expect(second).toMatchObject({ state: 'paused', previous: 'running', event: 'suspended' });
    expect(second?.address).toBeUndefined();
  });

  it('publishes a new address, and a new uid in the same state (the instance was replaced)', async () => {
    await publish(seen('b'));
    expect(await publish(seen('b', { address: '192.0.2.11' }))).toMatchObject({ published: true });
    expect(await publish(seen('b', { uid: 'uid-2', address: '192.0.2.11' }))).toMatchObject({
      published: true,
    });
    const all = await events();
    expect(all.map((e) => [e.uid, e.state, e.address, e.previous])).toEqual([
      ['uid-1', 'running', '192.0.2.10', undefined],
      ['uid-1', 'running', '192.0.2.11', 'running'],
      ['uid-2', 'running', '192.0.2.11', 'running'],
    ]);
  });

  it('says nothing of a domain defined and never started, unless it was published before', async () => {
    const defined = seen('c', { state: 'stopped', address: undefined, fresh: true }, 'defined');
    expect(await publish(defined)).toEqual({ published: false, reason: 'unchanged' });
    expect(await publishedInstances(scope.redis, scope.prefix, host)).toEqual([]);
    await publish(seen('c'));
    expect(await publish(defined)).toMatchObject({ published: true });
    expect((await events()).map((e) => e.state)).toEqual(['running', 'stopped']);
  });

  it('publishes gone once, with the uid it had, only for an instance it published', async () => {
    await publish(seen('d'));
    expect(await publishedInstances(scope.redis, scope.prefix, host)).toEqual(['d']);
    expect(await publish(gone('d'))).toMatchObject({ published: true });
    expect(await publish(gone('d'))).toEqual({ published: false, reason: 'unchanged' });
    expect(await publish(gone('never-seen'))).toEqual({ published: false, reason: 'unchanged' });
    expect(await publishedInstances(scope.redis, scope.prefix, host)).toEqual([]);
    const last = (await events()).at(-1);
    expect(last).toMatchObject({ state: 'gone', previous: 'running', uid: 'uid-1' });
    expect(last?.address).toBeUndefined();
  });

  it("reads a kept uid whole, whatever it holds, and the state after it (the hash's value)", async () => {
    // A uid read back from a domain's metadata is whatever the metadata says; with spaces in
    // it, the first word was taken for the uid and the second for the previous state.
    await publish(seen('f', { uid: 'x running 10.9.9.9', state: 'paused' }));
    expect(await publish(gone('f'))).toMatchObject({ published: true });
    expect((await events()).at(-1)).toMatchObject({
      state: 'gone',
      previous: 'paused',
      uid: 'x running 10.9.9.9',
    });
  });

  it('publishes nothing without the lease: lapsed, or held by another watcher', async () => {
    await scope.redis.set(lease.redisKey, 'someone-else', 'PX', 60_000);
    expect(await publish(seen('e'))).toEqual({ published: false, reason: 'not-leaseholder' });
    await scope.redis.del(lease.redisKey);
    expect(await publish(seen('e'))).toEqual({ published: false, reason: 'not-leaseholder' });
    expect(await events()).toEqual([]);
    expect(await publishedInstances(scope.redis, scope.prefix, host)).toEqual([]);
  });
});

describe('reading events beside results', () => {
  it('results readers skip events (and acknowledge them); readStream returns both, told apart', async () => {
    await ensureResultsGroup(scope.redis, scope.prefix, 'results-only', '$');
    await ensureResultsGroup(scope.redis, scope.prefix, 'everything', '$');
    await publish(seen('f'));
    await appendResult(scope.redis, scope.prefix, result('job-f', 'succeeded'));

    const [eventEntry] = await scope.redis.xrevrange(
      resultsKey(scope.prefix),
      '+',
      '-',
      'COUNT',
      2,
    );
    expect(eventEntry).toBeDefined();

    const results = await readResults(scope.redis, scope.prefix, {
      group: 'results-only',
      consumer: 'c',
    });
    expect(results.map((r) => r.jobId)).toEqual(['job-f']);
    await ackResults(
      scope.redis,
      scope.prefix,
      'results-only',
      results.map((r) => r.streamId),
    );
    // Nothing left pending for the group: the event was acknowledged for it.
    const pending = (await scope.redis.xpending(resultsKey(scope.prefix), 'results-only')) as [
      number,
      ...unknown[],
    ];
    expect(pending[0]).toBe(0);

    const both = await readStream(scope.redis, scope.prefix, {
      group: 'everything',
      consumer: 'c',
    });
    expect(both.map((e) => e.type)).toEqual(['event', 'result']);
    expect(both[0]).toMatchObject({ type: 'event', instanceId: `${host}/f`, state: 'running' });
    expect(both[1]).toMatchObject({ type: 'result', jobId: 'job-f', outcome: 'succeeded' });
  });

  it('an event is not a result, and a result is not an event', () => {
    const eventFields = [
      'type',
      'event',
      'instanceId',
      'h/x',
      'host',
      'h',
      'state',
      'running',
      'event',
      'started',
    ];
    expect(parseResult('1-0', eventFields)).toBeUndefined();
    expect(parseInstanceEvent('1-0', eventFields)).toMatchObject({ state: 'running' });
    const resultFields = [
      'jobId',
      'j',
      'op',
      'create',
      'outcome',
      'succeeded',
      'instanceId',
      'h/x',
    ];
    expect(parseInstanceEvent('1-0', resultFields)).toBeUndefined();
  });
});
