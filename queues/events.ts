// Instance events on the results stream (docs/events.md): an entry `type=event` each time one of
// kvm2's instances changes without a job saying so, or with one (a create's boot, a delete), as
// the host's watcher sees it. Published once per change by a script that diffs against the
// last published state (a hash per host) and checks the publisher still holds the host's watch
// lease. Events are not jobs: they never enter BullMQ.
import { formatInstanceId } from '../src/provider/core/ids.js';
import type { InstanceState } from '../src/provider/core/state.js';
import type { HostChange } from '../src/provider/operations/watch-host.js';
import { instanceStateKey, resultsKey } from './names.js';
import { RESULTS_MAX_LEN } from './results.js';
import { LuaScript } from './script.js';
import type { RedisConnection } from './redis.js';

/** An instance that no longer exists (undefined: deleted by kvm2 or by hand). */
export type EventState = InstanceState | 'gone';

export interface InstanceEventEntry {
  readonly type: 'event';
  readonly streamId: string;
  /** `<host>/<name>` */
  readonly instanceId: string;
  readonly host: string;
  readonly uid: string;
  readonly state: EventState;
  /** The state published before this one; absent for an instance's first event. */
  readonly previous?: EventState | undefined;
  readonly address?: string | undefined;
  /** libvirt's event (`stopped`, `agent-connected`, …) or `resync` / `recheck` (docs/events.md). */
  readonly event: string;
  /** libvirt's detail of it (`destroyed`, `paused`, …). */
  readonly detail?: string | undefined;
  /** Milliseconds since the epoch, when the watcher published it. */
  readonly timestamp: number;
}

const PUBLISH = LuaScript.load('publish-instance-event');

/** The publish script's answer. */
export type PublishOutcome =
  | { readonly published: true; readonly streamId: string }
  | { readonly published: false; readonly reason: 'unchanged' | 'not-leaseholder' };

/** What the state hash holds for a present instance: `<uid> <state> <address or ->`. */
function stateValue(uid: string, state: InstanceState, address: string | undefined): string {
  return `${uid} ${state} ${address ?? '-'}`;
}

/**
 * Publishes one change of a host's instance unless it is no change; only while `lease` (the
 * host's watch lease) is still held with its token.
 */
export async function publishInstanceChange(
  redis: RedisConnection,
  prefix: string,
  lease: { readonly redisKey: string; readonly token: string },
  change: HostChange,
  now = Date.now(),
): Promise<PublishOutcome> {
  const { host, name } = change;
  const fields: string[] = ['type', 'event'];
  const put = (field: string, value: string | number | undefined): void => {
    if (value !== undefined) fields.push(field, String(value));
  };
  put('instanceId', formatInstanceId(host, name));
  put('host', host);
  let value = '';
  let fresh = false;
  const o = change.observation;
  if (o !== undefined) {
    put('uid', o.uid);
    put('state', o.state);
    put('address', o.address);
    value = stateValue(o.uid, o.state, o.address);
    fresh = o.fresh;
  } else {
    put('state', 'gone');
  }
  put('event', change.cause.event);
  put('detail', change.cause.detail);
  put('timestamp', now);
  const answer = await PUBLISH.run(
    redis,
    [lease.redisKey, instanceStateKey(prefix, host), resultsKey(prefix)],
    [lease.token, name, value, fresh ? '1' : '0', RESULTS_MAX_LEN, ...fields],
  );
  if (answer === -1) return { published: false, reason: 'not-leaseholder' };
  if (answer === 0) return { published: false, reason: 'unchanged' };
  return { published: true, streamId: String(answer) };
}

/** The names of a host's instances whose last published state is not `gone`. */
export async function publishedInstances(
  redis: RedisConnection,
  prefix: string,
  host: string,
): Promise<string[]> {
  return redis.hkeys(instanceStateKey(prefix, host));
}

/** A stream entry's flat field list back to an event; undefined when it is not one. */
export function parseInstanceEvent(
  streamId: string,
  flat: readonly string[],
): InstanceEventEntry | undefined {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i] ?? '', flat[i + 1] ?? '');
  const instanceId = f.get('instanceId');
  const host = f.get('host');
  const state = f.get('state') as EventState | undefined;
  const event = f.get('event');
  if (f.get('type') !== 'event' || instanceId === undefined || host === undefined) return undefined;
  if (state === undefined || event === undefined) return undefined;
  return {
    type: 'event',
    streamId,
    instanceId,
    host,
    uid: f.get('uid') ?? '',
    state,
    previous: f.get('previous') as EventState | undefined,
    address: f.get('address'),
    event,
    detail: f.get('detail'),
    timestamp: Number(f.get('timestamp') ?? '0'),
  };
}
