// kvm2 list: the instances with a tag across all hosts (SPEC §3 listByTag), from the domain
// list and metadata only: state says only running or stopped, and no address is read.
import { Provider } from '../../src/provider/provider.js';
import type { ParsedArgs } from '../options/args.js';
import { cliLogger, loadCliConfig } from '../options/config.js';
import { EXIT } from '../terminal/errors.js';
import { table } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const tag = args.required('tag');
  const config = await loadCliConfig(args, io);
  const provider = new Provider(config, { logger: cliLogger(io) });
  try {
    const instances = await provider.listByTag(tag);
    instances.sort((a, b) => a.id.localeCompare(b.id));
    if (args.flag('json')) {
      printJson(io, instances);
    } else {
      io.out(
        ...table(
          ['ID', 'STATE', 'ADDRESS', 'CREATED', 'IMAGE'],
          instances.map((i) => [i.id, i.state, i.address, i.createdAt, i.image]),
        ),
      );
    }
    return EXIT.ok;
  } finally {
    await provider.close();
  }
}
