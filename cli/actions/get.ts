// kvm2 get: one instance as libvirt sees it now (SPEC §3), read directly from its host.
import { Provider } from '../../src/provider/provider.js';
import type { ParsedArgs } from '../options/args.js';
import { cliLogger, loadCliConfig } from '../options/config.js';
import { EXIT } from '../terminal/errors.js';
import { keyValues } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const id = args.instanceId(args.positionals[0] ?? '', 'ID');
  const config = await loadCliConfig(args, io);
  const provider = new Provider(config, { logger: cliLogger(io) });
  try {
    const instance = await provider.get(id);
    if (args.flag('json')) {
      printJson(io, instance);
    } else {
      io.out(
        ...keyValues([
          ['id', instance.id],
          ['host', instance.host],
          ['name', instance.name],
          ['uid', instance.uid],
          ['state', instance.state],
          ['address', instance.address],
          ['created', instance.createdAt],
          ['tag', instance.tag],
          ['image', instance.image],
        ]),
      );
    }
    return EXIT.ok;
  } finally {
    await provider.close();
  }
}
