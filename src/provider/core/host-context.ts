// What every provider operation is given: the frozen configuration, the host table, the
// locks, and telemetry. Built once at start; building it never dials (SPEC §2).
import { trace, type Tracer } from '@opentelemetry/api';
import pino, { type Logger } from 'pino';
import { HostTable, type HostTableOptions } from '../../libvirt/host-table.js';
import { hostTargets } from '../config/load.js';
import type { HostConfig, ImageConfig, Kvm2Config } from '../config/schema.js';
import { Kvm2Error } from '../../errors/error.js';
import { InProcessLocks, type KeyedLocks } from './keyed-locks.js';

export interface ProviderContext {
  readonly config: Kvm2Config;
  readonly hosts: HostTable;
  readonly locks: KeyedLocks;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

export interface ContextOptions {
  readonly locks?: KeyedLocks | undefined;
  readonly logger?: Logger | undefined;
  readonly tracer?: Tracer | undefined;
  readonly hostTable?: Omit<HostTableOptions, 'logger' | 'tracer'> | undefined;
}

export function createContext(config: Kvm2Config, options: ContextOptions = {}): ProviderContext {
  const logger = options.logger ?? pino({ level: 'silent' });
  const tracer = options.tracer ?? trace.getTracer('kvm2');
  return {
    config,
    hosts: new HostTable(hostTargets(config), { ...options.hostTable, logger, tracer }),
    locks: options.locks ?? new InProcessLocks(),
    logger,
    tracer,
  };
}

export function hostConfig(ctx: ProviderContext, host: string): HostConfig {
  const h = ctx.config.hosts.find((x) => x.name === host);
  if (h === undefined) {
    const known = ctx.config.hosts.map((x) => x.name).join(', ');
    throw new Kvm2Error(
      'ERR_UNKNOWN_HOST',
      `host '${host}' is not in the configuration (hosts: ${known})`,
    );
  }
  return h;
}

export function imageConfig(ctx: ProviderContext, image: string): ImageConfig {
  // Own keys only: an image named `constructor` is not one the configuration has.
  const i = Object.hasOwn(ctx.config.images, image) ? ctx.config.images[image] : undefined;
  if (i === undefined) {
    const known = Object.keys(ctx.config.images).join(', ');
    throw new Kvm2Error(
      'ERR_UNKNOWN_IMAGE',
      `request.image: image '${image}' is not in the configuration (images: ${known})`,
    );
  }
  return i;
}
