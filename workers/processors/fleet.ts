// The fleet-wide jobs: `gc` (queue gc) and `health` (queue health), SPEC §8.
import { deleteData, enqueueDelete } from '../../queues/enqueue.js';
import { requestCount } from '../../queues/generations.js';
import { writeHealth } from '../../queues/health.js';
import { currentTraceContext } from '../../queues/client.js';
import { checkHost } from '../../src/provider/operations/check.js';
import type { JobRun } from '../run/job-run.js';
import { JobLocks } from '../locks/job-locks.js';
import { succeeded, type Step } from '../run/outcome.js';

/**
 * GC of one tag: note how many requests were made before it began, list every host (listByTag
 * fails whole when any host cannot be listed, so a partial view deletes nothing), sweep each
 * host's orphan kvm2 volumes, then enqueue a delete through the host's queue for each instance
 * that is not kept and is older than the grace period. Deletes go through the queues like any
 * request, so they take their generation and lock; each is enqueued only while no request for
 * its instance was made since the app asked for the GC (else it is skipped: a create that
 * replaced the instance after the keep list was made, or while the GC listed it, must win) and
 * while its last request is not a create of another uid than the one listed (a create that
 * replaces it, enqueued before the GC but not run yet: the delete would supersede it); a create
 * enqueued after the GC's delete wins over it.
 */
export async function processGc(run: JobRun<'gc'>): Promise<Step> {
  const { services: env, data, signal } = run;
  const now = Date.now();
  // Before the listing: a request for a victim made from here on (a create that replaces it
  // while the hosts are listed) must win, so its delete goes out only if none was. From the
  // app's gc() call when the client noted it: the keep list is as of then.
  const began = data.requestsBefore ?? (await requestCount(env.redis, env.prefix));
  const instances = await env.provider.listByTag(data.tag, { signal });
  const keep = new Set(data.keep);
  const kept = instances.filter((i) => keep.has(i.id));
  // A kept id that names no listed instance keeps nothing: gone already, of another tag, or a
  // mistyped id, in which case the instance meant is among the victims. Said, not guessed at.
  const listed = new Set(instances.map((i) => i.id));
  const unmatched = [...keep].filter((id) => !listed.has(id));
  if (unmatched.length > 0) {
    run.logger.warn(
      { tag: data.tag, unmatched },
      'gc: kept ids that name no instance of the tag (gone, of another tag, or mistyped)',
    );
  }
  const young = instances.filter(
    (i) => !keep.has(i.id) && !isOlder(i.createdAt, now, data.graceMs),
  );
  const victims = instances.filter(
    (i) => !keep.has(i.id) && isOlder(i.createdAt, now, data.graceMs),
  );
  // With a job's locks (JobLocks) a busy instance is skipped by the sweep, never waited on.
  const provider = env.provider.withLocks(new JobLocks(env.locks));
  const sweeps = await Promise.all(
    env.config.hosts.map((h) =>
      provider.sweepOrphanVolumes(h.name, { olderThanMs: data.graceMs, now, signal }),
    ),
  );
  const removed = sweeps.flatMap((s) => s.removed);

  const traceContext = currentTraceContext();
  const deleting: string[] = [];
  const overtaken: string[] = [];
  for (const instance of victims) {
    signal.throwIfAborted();
    const request = deleteData(instance.id, traceContext);
    const queued = await enqueueDelete(env.redis, env.prefix, request, {
      unrequestedSince: began,
      uid: instance.uid,
    });
    (queued === undefined ? overtaken : deleting).push(instance.id);
  }
  run.logger.info(
    {
      tag: data.tag,
      deleting,
      overtaken,
      kept: kept.length,
      young: young.length,
      orphanVolumesRemoved: removed,
    },
    'gc round',
  );
  return succeeded({
    message:
      `tag '${data.tag}': ${instances.length} instances, deleting ${deleting.length}` +
      ` (${kept.length} kept, ${young.length} within the grace period` +
      `${overtaken.length === 0 ? '' : `, ${overtaken.length} requested since the GC was asked for or being replaced`});` +
      ` removed ${removed.length} orphan volumes` +
      (unmatched.length === 0
        ? ''
        : `; ${unmatched.length} kept ids name no instance of the tag: ${listSome(unmatched)}`),
  });
}

/** The first few of `ids`, and how many more. */
function listSome(ids: readonly string[], max = 5): string {
  const shown = ids.slice(0, max).join(', ');
  return ids.length > max ? `${shown} and ${ids.length - max} more` : shown;
}

function isOlder(createdAt: string, now: number, graceMs: number): boolean {
  const created = Date.parse(createdAt);
  // An unreadable date is never old enough: GC deletes only what it can date.
  return Number.isFinite(created) && now - created >= graceMs;
}

/** One host's health round: the report goes to the health hash and the results stream. */
export async function processHealth(run: JobRun<'health'>): Promise<Step> {
  const { services: env, data, signal } = run;
  const report = await checkHost(env.provider.ctx, data.host, { signal });
  await writeHealth(env.redis, env.prefix, report);
  return succeeded({
    state: report.status,
    message: `host ${data.host}: ${report.reason}: ${report.message}`,
  });
}
