// kvm2 create: enqueue a create (SPEC §3, §8) on the host's queue, or the zone's placement.
// The --user-data and --network-config files (or standard input, `-`) are read here and travel
// only in the job: their content is never printed, not even in an error.
import { readFile } from 'node:fs/promises';
import { Kvm2Client, type CreateInput } from '../../queues/client.js';
import { redisTarget } from '../../queues/redis.js';
import { newUid, parseInstanceId } from '../../src/provider/core/ids.js';
import type { ParsedArgs } from '../options/args.js';
import { configuredHost, loadCliConfig } from '../options/config.js';
import { checkJobFlags, CREATE_FLAGS } from '../options/job-flags.js';
import { CliError, EXIT } from '../terminal/errors.js';
import { keyValues } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';
import { reportFinal, waitForFinal, waitTimeoutMs } from './wait.js';

/** The file options; `-` reads standard input, for one of them at most. */
const FILE_OPTIONS = ['user-data', 'network-config'] as const;
type FileOption = (typeof FILE_OPTIONS)[number];

/** Checks the file options' values as usage: none empty, at most one `-`. */
function checkFileOptions(args: ParsedArgs): void {
  for (const option of FILE_OPTIONS) {
    // An empty value (`--user-data "$UNSET"`) names no file; as --config=, a usage mistake.
    if (args.string(option) === '') {
      throw args.usageError(`option --${option} needs a file name, got an empty value`);
    }
  }
  const fromStdin = FILE_OPTIONS.filter((option) => args.string(option) === '-');
  if (fromStdin.length > 1) {
    throw args.usageError(
      `only one option can read standard input: ${fromStdin.map((o) => `--${o}`).join(' and ')} both name -`,
    );
  }
}

/**
 * Reads a file named by an option (`-`: standard input) as UTF-8 text; errors name the option
 * and the path only.
 */
async function readTextOption(
  args: ParsedArgs,
  io: CliIo,
  option: FileOption,
): Promise<string | undefined> {
  const file = args.string(option);
  if (file === undefined) return undefined;
  const source = file === '-' ? 'standard input' : file;
  const read = file === '-' ? io.readStdin : () => readFile(file);
  if (read === undefined) throw new CliError(`--${option}: there is no standard input here`);
  let bytes: Buffer;
  try {
    bytes = await read();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new CliError(`--${option}: cannot read ${source} (${code})`);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CliError(
      `--${option}: ${source} is not UTF-8 text (compressed user-data is not supported)`,
    );
  }
}

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const host = args.string('host');
  const zone = args.string('zone');
  if ((host === undefined) === (zone === undefined)) {
    throw args.usageError('name exactly one of --host and --zone');
  }
  const name = args.required('name');
  const image = args.required('image');
  const vcpus = args.positiveInt('vcpus');
  const memoryMiB = args.positiveInt('memory-mib');
  const diskGiB = args.positiveInt('disk-gib');
  const json = args.flag('json');
  const timeoutMs = waitTimeoutMs(args);
  checkFileOptions(args);

  const userData = await readTextOption(args, io, 'user-data');
  const networkConfig = await readTextOption(args, io, 'network-config');
  const input: CreateInput = {
    uid: newUid(),
    ...(host === undefined ? {} : { host }),
    ...(zone === undefined ? {} : { zone }),
    name,
    image,
    ...(args.string('tag') === undefined ? {} : { tag: args.string('tag') }),
    ...(userData === undefined ? {} : { userData }),
    ...(networkConfig === undefined ? {} : { networkConfig }),
    ...(vcpus === undefined ? {} : { vcpus }),
    ...(memoryMiB === undefined ? {} : { memoryMiB }),
    ...(diskGiB === undefined ? {} : { diskGiB }),
  };
  // The job as the client will make it (generation 1 stands in for the real one), checked
  // before the configuration is read: a value no job takes is a mistake on the command line.
  checkJobFlags(args, 'create', { ...input, generation: 1 }, CREATE_FLAGS);

  const config = await loadCliConfig(args, io);
  if (host !== undefined) configuredHost(config, host, '--host');
  if (!Object.hasOwn(config.images, image)) {
    const known = Object.keys(config.images);
    throw new CliError(
      `--image: image '${image}' is not in the configuration (images: ${known.length === 0 ? 'none' : known.join(', ')})`,
    );
  }

  const client = Kvm2Client.fromConfig(config);
  try {
    const job = await client.create(input, { wait: !args.flag('no-wait-address') });
    if (!args.flag('wait')) {
      if (json) {
        printJson(io, { jobId: job.jobId, id: job.id, uid: job.uid, generation: job.generation });
      } else {
        io.out(
          ...keyValues([
            ['job', job.jobId],
            ['instance', job.id],
            ['uid', job.uid],
          ]),
        );
      }
      return EXIT.ok;
    }
    if (!json)
      io.out(
        ...keyValues([
          ['job', job.jobId],
          ['instance', job.id],
          ['uid', job.uid],
        ]),
      );
    const redis = redisTarget(config.redis);
    const result = await waitForFinal(client, job.jobId, io, {
      timeoutMs,
      redis,
      progress: {
        redis,
        prefix: config.redis.prefix,
        host: parseInstanceId(job.id).host,
        jobId: job.jobId,
        label: job.id,
      },
    });
    return reportFinal(result, io, json);
  } finally {
    await client.close();
  }
}
