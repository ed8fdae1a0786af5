// The provider contract (SPEC §3) as one object: create, get, delete, listByTag, check. It
// never imports BullMQ; the queue layer turns its error kinds into retries.
import type { Kvm2Config } from './config/schema.js';
import { createContext, type ContextOptions, type ProviderContext } from './core/host-context.js';
import type { KeyedLocks } from './core/keyed-locks.js';
import type { Instance } from './core/instance.js';
import type { DownloadProgress } from './image/fill.js';
import { create, type CreatePhase } from './operations/create.js';
import { deleteInstance } from './operations/delete.js';
import { get } from './operations/get.js';
import { listByTag, listHostInstances } from './operations/list-by-tag.js';
import { sweepOrphanVolumes, type SweepReport } from './operations/sweep.js';
import { HostWatch, type HostWatchOptions } from './operations/watch-host.js';
import type { CreateRequest } from './core/request.js';

export interface OperationOptions {
  readonly signal?: AbortSignal | undefined;
}

export class Provider {
  readonly ctx: ProviderContext;

  constructor(config: Kvm2Config, options?: ContextOptions) {
    this.ctx = createContext(config, options);
  }

  /**
   * The same provider (configuration, connections, telemetry) taking its keyed locks from
   * `locks`: a worker hands each job's locks to the operations it runs. Closing the view closes
   * the shared connections, so close only the original.
   */
  withLocks(locks: KeyedLocks): Provider {
    const view = Object.create(Provider.prototype) as { ctx: ProviderContext };
    view.ctx = { ...this.ctx, locks };
    return view as Provider;
  }

  create(
    request: CreateRequest,
    options?: OperationOptions & {
      onProgress?: ((phase: CreatePhase) => void) | undefined;
      onBytes?: DownloadProgress | undefined;
    },
  ): Promise<Instance> {
    return create(this.ctx, request, options);
  }

  get(id: string, options?: OperationOptions): Promise<Instance> {
    return get(this.ctx, id, options);
  }

  delete(id: string, options?: OperationOptions): Promise<void> {
    return deleteInstance(this.ctx, id, options);
  }

  listByTag(tag: string, options?: OperationOptions): Promise<Instance[]> {
    return listByTag(this.ctx, tag, options);
  }

  /** Every kvm2 instance of one host, of any tag (the fleet page). */
  listHost(host: string, options?: OperationOptions): Promise<Instance[]> {
    return listHostInstances(this.ctx, host, options);
  }

  /**
   * GC's orphan-volume sweep on one host (SPEC §8): deletes kvm2 overlays and seeds whose
   * domain is gone and that last changed more than `olderThanMs` before `now`.
   */
  sweepOrphanVolumes(
    host: string,
    options: { olderThanMs: number; now?: number; signal?: AbortSignal },
  ): Promise<SweepReport> {
    return sweepOrphanVolumes(this.ctx, host, options);
  }

  /**
   * Watches one host's kvm2 instances (docs/events.md) on a connection of the watch's own:
   * each change handed to `options.publish`, and a resync after every (re)connect. Not started.
   */
  watch(options: HostWatchOptions): HostWatch {
    return new HostWatch(this.ctx, options);
  }

  /** Closes the shared connections; `now`: dropped at once, the calls on them failed. */
  close(options: { readonly now?: boolean } = {}): Promise<void> {
    return this.ctx.hosts.close(options);
  }
}
