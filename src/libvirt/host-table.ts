// One shared, pipelined connection per host, dialed lazily and once however many callers wait;
// each caller waits only as long as its own signal allows (SPEC §4). A dead link is dropped and
// the next caller dials again. Image uploads and health probes ask for `dedicated` connections.
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { CallAbortedError, LinkClosedError } from './errors.js';
import { LibvirtConnection, type ConnectOptions } from './connection.js';
import type { Procedure } from './procedure.js';
import type { CallOptions } from './rpc-client.js';
import type { LibvirtTarget } from './transport/uri.js';
import { Kvm2Error, type Kvm2ErrorOptions } from '../errors/error.js';

export interface HostTableOptions {
  readonly logger?: Logger | undefined;
  readonly tracer?: Tracer | undefined;
  readonly dialTimeoutMs?: number | undefined;
  readonly callTimeoutMs?: number | undefined;
  readonly streamStallMs?: number | undefined;
  readonly maxInFlight?: number | undefined;
  readonly keepalive?: ConnectOptions['keepalive'];
}

export class UnknownHostError extends Kvm2Error {
  declare readonly code: 'ERR_UNKNOWN_HOST';
  override name = 'UnknownHostError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_UNKNOWN_HOST', message, options);
  }
}

export class HostTable {
  private readonly targets: ReadonlyMap<string, LibvirtTarget>;
  private readonly live = new Map<string, LibvirtConnection>();
  private readonly dialing = new Map<string, Promise<LibvirtConnection>>();
  private closed = false;
  /** Aborts the dials in flight when the table closes. */
  private readonly closing = new AbortController();

  constructor(
    targets: Iterable<readonly [string, LibvirtTarget]>,
    private readonly options: HostTableOptions = {},
  ) {
    this.targets = new Map(targets);
  }

  hosts(): string[] {
    return [...this.targets.keys()];
  }

  target(host: string): LibvirtTarget {
    const t = this.targets.get(host);
    if (t === undefined) throw new UnknownHostError(`unknown host '${host}'`);
    return t;
  }

  /** The host's shared connection, dialing it if there is none. */
  async shared(
    host: string,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<LibvirtConnection> {
    const conn = this.live.get(host);
    if (conn !== undefined && !conn.isDown) return conn;
    this.refuseIfClosed(host);
    const signal = options?.signal;
    if (signal?.aborted) throw new CallAbortedError('dial', false, { cause: signal.reason });
    let dial = this.dialing.get(host);
    if (dial === undefined) {
      dial = this.dialShared(host);
      this.dialing.set(host, dial);
    }
    return waitWithSignal(dial, signal);
  }

  /**
   * A fresh connection of the caller's own, to close when done. The table does not track it,
   * but closing the table ends its dial if that is still under way.
   */
  async dedicated(
    host: string,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<LibvirtConnection> {
    this.refuseIfClosed(host);
    const signal =
      options?.signal === undefined
        ? this.closing.signal
        : AbortSignal.any([options.signal, this.closing.signal]);
    return LibvirtConnection.connect(this.target(host), this.connectOptions(host, signal));
  }

  /** One call on the host's shared connection. */
  async call<A, R>(
    host: string,
    proc: Procedure<A, R>,
    args: A,
    options?: CallOptions,
  ): Promise<R> {
    const conn = await this.shared(host, options);
    return conn.call(proc, args, options);
  }

  /**
   * Closes the shared connections and ends the dials under way; later calls are refused. With
   * `now`, the links are dropped without the goodbye (a wedged link would hold its ConnectClose
   * 2 s): every call in flight on them fails at once.
   */
  async close(options: { readonly now?: boolean } = {}): Promise<void> {
    this.closed = true;
    const reason = new LinkClosedError('the host table is closed');
    this.closing.abort(reason);
    const dials = [...this.dialing.values()];
    const conns = [...this.live.values()];
    this.live.clear();
    if (options.now === true) for (const c of conns) c.destroy(reason);
    await Promise.all([
      ...dials.map((d) => d.catch(() => undefined)),
      ...conns.map((c) => c.close()),
    ]);
  }

  private refuseIfClosed(host: string): void {
    if (this.closed) throw this.closedError(host);
  }

  private closedError(host: string): LinkClosedError {
    return new LinkClosedError(`no connection to host '${host}': the host table is closed`);
  }

  private async dialShared(host: string): Promise<LibvirtConnection> {
    try {
      // The shared dial belongs to no caller: it runs to its own budget even if every caller
      // gave up, and the next caller finds the connection ready.
      let conn: LibvirtConnection;
      try {
        conn = await LibvirtConnection.connect(
          this.target(host),
          this.connectOptions(host, this.closing.signal),
        );
      } catch (err) {
        throw this.closed ? this.closedError(host) : err;
      }
      if (this.closed) {
        conn.destroy();
        throw this.closedError(host);
      }
      this.live.set(host, conn);
      conn.once('close', () => {
        if (this.live.get(host) === conn) this.live.delete(host);
      });
      return conn;
    } finally {
      this.dialing.delete(host);
    }
  }

  private connectOptions(host: string, signal: AbortSignal | undefined): ConnectOptions {
    const o = this.options;
    return {
      host,
      signal,
      dialTimeoutMs: o.dialTimeoutMs,
      callTimeoutMs: o.callTimeoutMs,
      streamStallMs: o.streamStallMs,
      maxInFlight: o.maxInFlight,
      keepalive: o.keepalive,
      logger: o.logger,
      tracer: o.tracer,
    };
  }
}

function waitWithSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void =>
      reject(new CallAbortedError('dial', false, { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
