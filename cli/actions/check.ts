// kvm2 check: probe hosts now (SPEC §3 check()), each on a fresh connection. Exit status 1 when
// any host is unhealthy; a degraded host (low pool space) still takes work, so it is 0.
import { checkHosts } from '../../src/provider/operations/check.js';
import { Provider } from '../../src/provider/provider.js';
import type { ParsedArgs } from '../options/args.js';
import { cliLogger, configuredHost, loadCliConfig } from '../options/config.js';
import { EXIT } from '../terminal/errors.js';
import { formatBytes, table } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const hosts = args.list('host');
  const config = await loadCliConfig(args, io);
  for (const host of hosts) configuredHost(config, host, '--host');
  const provider = new Provider(config, { logger: cliLogger(io) });
  try {
    const reports = await checkHosts(provider.ctx, {
      hosts: hosts.length === 0 ? undefined : hosts,
    });
    if (args.flag('json')) {
      printJson(io, reports);
    } else {
      io.out(
        ...table(
          ['HOST', 'ZONE', 'STATUS', 'REASON', 'LIBVIRT', 'POOL FREE', 'DOMAINS', 'MS', 'MESSAGE'],
          reports.map((r) => [
            r.host,
            r.zone,
            r.status,
            r.reason,
            r.details.libvirtVersion,
            r.details.poolAvailableBytes === undefined
              ? undefined
              : formatBytes(r.details.poolAvailableBytes),
            r.details.domainCount,
            r.durationMs,
            r.message,
          ]),
        ),
      );
    }
    return reports.some((r) => r.status === 'unhealthy') ? EXIT.failure : EXIT.ok;
  } finally {
    await provider.close();
  }
}
