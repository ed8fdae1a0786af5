// kvm2 config check: load and validate the configuration without dialing anything, print its
// warnings and a summary. Credentials never show: the Redis URL's credentials, a libvirt URI's
// password and image URLs' userinfo and query values are hidden (redactUrl), and the board's
// credentials are only said to be set.
import { redactUrl } from '../../src/errors/redact-url.js';
import { ConfigError, resolveConfigPath } from '../../src/provider/config/load.js';
import { configWarnings } from '../../src/provider/config/warnings.js';
import type { Kvm2Config } from '../../src/provider/config/schema.js';
import type { ParsedArgs } from '../options/args.js';
import { configFile, loadCliConfig } from '../options/config.js';
import { redisEndpoint, redisTarget } from '../../queues/redis.js';
import { EXIT } from '../terminal/errors.js';
import { formatBytes, formatDuration, keyValues, table } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';

function summary(config: Kvm2Config, file: string | undefined, warnings: readonly string[]) {
  return {
    valid: true,
    file: file ?? null,
    warnings,
    redis: {
      endpoint:
        config.redis.url === undefined
          ? redisEndpoint(redisTarget(config.redis))
          : redactUrl(config.redis.url),
      prefix: config.redis.prefix,
    },
    hosts: config.hosts.map((h) => ({
      name: h.name,
      uri: redactUrl(h.uri),
      zone: h.zone ?? null,
      pool: h.pool,
      network: h.network ?? null,
      bridge: h.bridge ?? null,
      concurrency: h.concurrency,
      domainType: h.domainType,
      firmware: h.firmware,
    })),
    images: Object.entries(config.images).map(([name, image]) => ({
      name,
      url: redactUrl(image.url),
      format: image.format,
      sha256: image.sha256 ?? null,
    })),
  };
}

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const json = args.flag('json');
  const file = resolveConfigPath({ file: configFile(args), env: io.env });
  let config: Kvm2Config;
  try {
    config = await loadCliConfig(args, io);
  } catch (err) {
    if (json && err instanceof ConfigError) {
      printJson(io, { valid: false, file: file ?? null, issues: err.issues });
    }
    throw err;
  }
  const warnings = configWarnings(config);
  for (const warning of warnings) io.err(`kvm2: warning: ${warning}`);
  const s = summary(config, file, warnings);
  if (json) {
    printJson(io, s);
    return EXIT.ok;
  }
  io.out(
    ...keyValues([
      ['configuration', file ?? 'embedded default (no --config, KVM2_CONFIG unset)'],
      ['redis', `${s.redis.endpoint} prefix ${s.redis.prefix}`],
      ['hosts', config.hosts.length],
      ['images', Object.keys(config.images).length],
      [
        'defaults',
        `${config.defaults.vcpus} vcpus, ${config.defaults.memoryMiB} MiB, ${config.defaults.diskGiB} GiB, address timeout ${formatDuration(config.defaults.addressTimeout)}`,
      ],
      [
        'health',
        `every ${formatDuration(config.health.every)}, timeout ${formatDuration(config.health.timeout)}, pool low below ${formatBytes(config.health.poolLowSpaceBytes)}`,
      ],
      [
        'worker',
        `endpoints ${config.worker.listen.host}:${config.worker.listen.port}, shutdown within ${formatDuration(config.worker.shutdownTimeout)}`,
      ],
      [
        'board',
        `${config.board.listen.host}:${config.board.listen.port}${config.board.auth === undefined ? '' : ', basic auth'}${config.board.readOnly ? ', read-only' : ''}`,
      ],
    ]),
    '',
    ...table(
      ['HOST', 'ZONE', 'POOL', 'NETWORK', 'CONCURRENCY', 'TYPE', 'URI'],
      s.hosts.map((h) => [
        h.name,
        h.zone ?? undefined,
        h.pool,
        h.network ?? (h.bridge === null ? undefined : `bridge ${h.bridge}`),
        h.concurrency,
        `${h.domainType}/${h.firmware}`,
        h.uri,
      ]),
    ),
  );
  if (s.images.length > 0) {
    io.out(
      '',
      ...table(
        ['IMAGE', 'FORMAT', 'SHA256', 'URL'],
        s.images.map((i) => [i.name, i.format, i.sha256 === null ? 'not set' : 'set', i.url]),
      ),
    );
  }
  return EXIT.ok;
}
