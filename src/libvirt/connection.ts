// A connection to one libvirtd: dial the transport, then libvirt's own opening sequence
// (remote_driver.c doRemoteOpen; LIBVIRT-RPC-FACTS §3):
//   AUTH_LIST (must come first, even as root) -> AUTH_POLKIT when that is all we are offered
//   -> CONNECT_SUPPORTS_FEATURE(PROGRAM_KEEPALIVE) -> CONNECT_OPEN(name)
// and CONNECT_CLOSE on the way out (the daemon replies, then closes the socket).
import { EventEmitter } from 'node:events';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { LibvirtError } from './errors.js';
import { DialError, type DialReason } from './transport/dial-error.js';
import { KEEPALIVE_DEFAULTS, type KeepaliveOptions } from './keepalive.js';
import type { Procedure } from './procedure.js';
import {
  AuthList,
  AuthPolkit,
  ConnectClose,
  ConnectOpen,
  ConnectSupportsFeature,
} from './protocol.gen.js';
import { RpcClient, type CallOptions, type StreamOptions } from './rpc-client.js';
import type { Link } from './transport/types.js';
import { dialUnix } from './transport/unix.js';
import { SPAN_STATUS_ERROR } from './tracing.js';
import type { LibvirtTarget } from './transport/uri.js';

const AUTH_NONE = 0;
const AUTH_POLKIT = 2;
const FEATURE_PROGRAM_KEEPALIVE = 10;

export interface ConnectOptions {
  /** kvm2's name for the host: logs, spans and errors carry it. */
  readonly host: string;
  readonly signal?: AbortSignal | undefined;
  /** Budget for transport and opening sequence together, ms. */
  readonly dialTimeoutMs?: number | undefined;
  readonly callTimeoutMs?: number | undefined;
  /** How long a stream may wait on the daemon with no bytes moving (RpcClient's default: 60 s). */
  readonly streamStallMs?: number | undefined;
  readonly maxInFlight?: number | undefined;
  /** `false` never asks the daemon for keepalive (it then never pings us). */
  readonly keepalive?: KeepaliveOptions | false | undefined;
  readonly logger?: Logger | undefined;
  readonly tracer?: Tracer | undefined;
}

export const CONNECT_DEFAULTS = Object.freeze({ dialTimeoutMs: 15_000 });

export class LibvirtConnection extends EventEmitter<{ close: [Error | undefined] }> {
  private constructor(
    readonly host: string,
    readonly target: LibvirtTarget,
    private readonly link: Link,
    private readonly rpc: RpcClient,
    /** The logger the connection was opened with: its subscribers' failures are logged there. */
    readonly logger: Logger | undefined,
  ) {
    super();
    rpc.once('close', (err) => {
      link.close();
      this.emit('close', err);
    });
  }

  static async connect(target: LibvirtTarget, options: ConnectOptions): Promise<LibvirtConnection> {
    const tracer = options.tracer;
    if (tracer === undefined) return LibvirtConnection.dial(target, options, undefined);
    return tracer.startActiveSpan(
      'kvm2.dial',
      { attributes: { 'kvm2.host': options.host, 'kvm2.transport': target.transport } },
      async (span) => {
        try {
          const conn = await LibvirtConnection.dial(target, options, tracer);
          span.end();
          return conn;
        } catch (err) {
          span.recordException(err as Error);
          span.setStatus({ code: SPAN_STATUS_ERROR, message: (err as Error).message });
          if (err instanceof DialError) span.setAttribute('kvm2.dial.stage', err.stage);
          span.end();
          throw err;
        }
      },
    );
  }

  private static async dial(
    target: LibvirtTarget,
    options: ConnectOptions,
    tracer: Tracer | undefined,
  ): Promise<LibvirtConnection> {
    const timeoutMs = options.dialTimeoutMs ?? CONNECT_DEFAULTS.dialTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    const dialOptions = { signal: options.signal, timeoutMs };
    // The SSH transport (ssh2: ~17 MiB of RSS and a share of start-up) loads with the first
    // SSH dial: a process that reaches libvirtd by its UNIX socket never loads it.
    const link =
      target.transport === 'ssh'
        ? await (await import('./transport/ssh.js')).dialSsh(target, dialOptions)
        : await dialUnix(target.socketPath, options.host, dialOptions);
    const rpc = new RpcClient(link.stream, {
      host: options.host,
      logger: options.logger,
      tracer,
      ...(options.maxInFlight === undefined ? {} : { maxInFlight: options.maxInFlight }),
      ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs }),
      ...(options.streamStallMs === undefined ? {} : { streamStallMs: options.streamStallMs }),
    });
    const conn = new LibvirtConnection(options.host, target, link, rpc, options.logger);
    try {
      const callOptions = (): CallOptions => ({
        signal: options.signal,
        timeoutMs: Math.max(1, deadline - Date.now()),
      });
      const { types } = await rpc.call(AuthList, undefined, callOptions());
      if (!types.includes(AUTH_NONE)) {
        if (!types.includes(AUTH_POLKIT)) {
          throw new DialError(
            `${options.host}: libvirtd offers only auth types [${types.join(', ')}]; kvm2 supports none and polkit`,
            'open',
            options.host,
            'auth_failed',
          );
        }
        await rpc.call(AuthPolkit, undefined, callOptions());
      }
      if (options.keepalive !== false) {
        const { supported } = await rpc.call(
          ConnectSupportsFeature,
          { feature: FEATURE_PROGRAM_KEEPALIVE },
          callOptions(),
        );
        if (supported !== 0) rpc.startKeepalive(options.keepalive ?? KEEPALIVE_DEFAULTS);
      }
      await rpc.call(ConnectOpen, { name: target.openName, flags: 0 }, callOptions());
      return conn;
    } catch (err) {
      rpc.destroy();
      link.close();
      throw openError(options.host, err);
    }
  }

  get isDown(): boolean {
    return this.rpc.isDown;
  }

  get inFlight(): number {
    return this.rpc.inFlight;
  }

  call<A, R>(proc: Procedure<A, R>, args: A, options?: CallOptions): Promise<R> {
    return this.rpc.call(proc, args, options);
  }

  /** The daemon's MESSAGEs for `proc` (events), decoded; returns the unsubscribe. */
  subscribe<M>(proc: Procedure<void, M>, handler: (message: M) => void): () => void {
    return this.rpc.subscribe(proc, handler);
  }

  upload<A>(
    proc: Procedure<A, unknown>,
    args: A,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options?: StreamOptions,
  ): Promise<void> {
    return this.rpc.upload(proc, args, source, options);
  }

  download<A>(
    proc: Procedure<A, unknown>,
    args: A,
    options?: StreamOptions,
  ): AsyncGenerator<Buffer, void, undefined> {
    return this.rpc.download(proc, args, options);
  }

  /** Says goodbye (CONNECT_CLOSE) when the link is up, then tears the link down. */
  async close(options?: CallOptions): Promise<void> {
    if (!this.rpc.isDown) {
      this.rpc.expectClose();
      try {
        await this.rpc.call(ConnectClose, undefined, { timeoutMs: 2000, ...options });
      } catch {
        // The goodbye is a courtesy: the link goes away regardless.
      }
    }
    this.destroy();
  }

  destroy(reason?: Error): void {
    this.rpc.destroy(reason);
    this.link.close();
  }
}

function openError(host: string, err: unknown): Error {
  if (err instanceof DialError) return err;
  const e = err as Error & { code?: string };
  let reason: DialReason = 'protocol_error';
  if (e.code === 'ERR_LIBVIRT_CALL_TIMEOUT') reason = 'timeout';
  else if (e.code === 'ERR_LIBVIRT_CALL_ABORTED') reason = 'aborted';
  else if (err instanceof LibvirtError && (err.libvirtCode === 45 || err.libvirtCode === 88)) {
    reason = 'auth_failed';
  }
  return new DialError(`${host}: opening libvirt failed: ${e.message}`, 'open', host, reason, {
    cause: err,
  });
}
