// The job a command builds from its flags, checked by the job registry's schema before the
// client checks it again: a value no job takes is then a usage mistake naming the flag as typed
// (status 2, docs/cli.md), not a job field (`job.create.name`, ERR_INVALID_JOB, status 1),
// which names nothing on the command line. The registry's messages never echo a value, so
// neither do these: --user-data is a file of secrets.
import { jobSchemas } from '../../queues/registry.js';
import type { ParsedArgs } from './args.js';

type FlagTable = Readonly<Record<string, string>>;

/** A create job's fields, each to the flag that gives it. */
export const CREATE_FLAGS: FlagTable = Object.freeze({
  host: '--host',
  zone: '--zone',
  name: '--name',
  image: '--image',
  tag: '--tag',
  userData: '--user-data',
  networkConfig: '--network-config',
  vcpus: '--vcpus',
  memoryMiB: '--memory-mib',
  diskGiB: '--disk-gib',
});

/** A gc job's fields, each to the flag that gives it. */
export const GC_FLAGS: FlagTable = Object.freeze({
  tag: '--tag',
  keep: '--keep',
  graceMs: '--grace',
});

/** Throws a usage error naming each flag whose field the job's schema refuses. */
export function checkJobFlags(
  args: ParsedArgs,
  name: 'create' | 'gc',
  job: unknown,
  flags: FlagTable,
): void {
  const result = jobSchemas[name].safeParse(job);
  if (result.success) return;
  const problems = result.error.issues.flatMap((issue) => {
    const field = issue.path[0];
    const flag =
      typeof field === 'string' && Object.hasOwn(flags, field) ? flags[field] : undefined;
    return flag === undefined ? [] : [`option ${flag} ${issue.message}`];
  });
  // A field no flag gives (the uid, the generation) is the CLI's own doing: the client's
  // ERR_INVALID_JOB (status 1) reports it.
  if (problems.length > 0) throw args.usageError([...new Set(problems)].join('; '));
}
