// kvm2 delete: enqueue a delete; it supersedes every earlier create or delete of the instance.
import { Kvm2Client } from '../../queues/client.js';
import { redisTarget } from '../../queues/redis.js';
import { parseInstanceId } from '../../src/provider/core/ids.js';
import type { ParsedArgs } from '../options/args.js';
import { configuredHost, loadCliConfig } from '../options/config.js';
import { EXIT } from '../terminal/errors.js';
import { keyValues } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';
import { reportFinal, waitForFinal, waitTimeoutMs } from './wait.js';

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const id = args.instanceId(args.positionals[0] ?? '', 'ID');
  const json = args.flag('json');
  const timeoutMs = waitTimeoutMs(args);
  const config = await loadCliConfig(args, io);
  configuredHost(config, parseInstanceId(id).host, id);
  const client = Kvm2Client.fromConfig(config);
  try {
    const job = await client.delete(id);
    if (!(json && args.flag('wait'))) {
      if (json) printJson(io, { jobId: job.jobId, id, generation: job.generation });
      else
        io.out(
          ...keyValues([
            ['job', job.jobId],
            ['instance', id],
          ]),
        );
    }
    if (!args.flag('wait')) return EXIT.ok;
    return reportFinal(
      await waitForFinal(client, job.jobId, io, { timeoutMs, redis: redisTarget(config.redis) }),
      io,
      json,
    );
  } finally {
    await client.close();
  }
}
