// The RPC engine: one link, many calls in flight matched by serial (call-table.ts), streams
// (stream-transfer.ts), keepalive, and the abandon policy of SPEC §4. It never dials; it is
// handed a byte stream (UNIX socket or SSH channel) and owns it until it closes.
//
// Abandon policy: libvirt cannot cancel a call. A call whose signal fires or whose budget runs
// out while on the wire kills the link; the other calls on the link fail once as interrupted
// and the owner (HostTable) dials a new link for the next call. Calls still queued locally
// have not reached the daemon: they fail alone, and the link stays.
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { CallTable } from './call-table.js';
import {
  CallAbortedError,
  LinkClosedError,
  LinkInterruptedError,
  ProtocolError,
} from './errors.js';
import { Keepalive, type KeepaliveOptions } from './keepalive.js';
import { afterTimers, loopFroze } from './loop-freeze.js';
import { FrameDecoder, MessageStatus, MessageType, type PacketHeader } from './packet.js';
import type { Procedure } from './procedure.js';
import { KEEPALIVE_PROGRAM, REMOTE_PROGRAM } from './protocol.gen.js';
import { remoteErrorOf } from './remote-error.js';
import type { StreamSink } from './streams.js';
import { MessageRoutes } from './message-routes.js';
import { downloadStream, uploadStream, type StreamChannel } from './stream-transfer.js';
import { XdrReader } from './xdr.js';

export interface RpcClientOptions {
  /** The host's name in kvm2's configuration: logs, spans and errors carry it. */
  readonly host: string;
  /**
   * Calls on the wire at once; more wait locally. libvirtd stops reading a connection with 5
   * requests outstanding (max_client_requests), which would leave keepalive PONGs unread, so
   * the default stays below it (LIBVIRT-RPC-FACTS §6).
   */
  readonly maxInFlight?: number;
  /** Budget of a call that names none, ms. */
  readonly callTimeoutMs?: number;
  /** How long an upload or download may wait on the daemon with no bytes moving, ms. */
  readonly streamStallMs?: number;
  readonly logger?: Logger | undefined;
  readonly tracer?: Tracer | undefined;
}

export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
  /** This call's budget, ms; overrides the client's default. */
  readonly timeoutMs?: number | undefined;
  /**
   * One of many quick reads sent at once (listByTag's metadata reads): it may go on the wire
   * while fewer than BURST_IN_FLIGHT calls are there, not only maxInFlight (docs/libvirt-client.md).
   */
  readonly burst?: boolean | undefined;
}

export interface StreamOptions extends CallOptions {
  /** This stream's stall limit, ms; overrides the client's default. */
  readonly stallMs?: number | undefined;
}

const DEFAULTS = Object.freeze({ maxInFlight: 4, callTimeoutMs: 60_000, streamStallMs: 60_000 });
/**
 * Bytes our writes may leave queued in the link: libvirt's largest message (VIR_NET_MESSAGE_MAX,
 * 32 MiB). Our calls (a few on the wire, each far smaller) and an upload (two packets) never
 * queue that much; a link that holds more has a peer that stopped reading it.
 */
const QUEUED_WRITE_MAX = 32 * 1024 * 1024;

export class RpcClient extends EventEmitter<{ close: [Error | undefined] }> {
  readonly host: string;
  private readonly callTimeoutMs: number;
  private readonly calls: CallTable;
  private readonly decoder: FrameDecoder;
  /** The link as the stream transfers see it. */
  private readonly channel: StreamChannel;
  private readonly streams = new Map<number, StreamSink>();
  private readonly messages: MessageRoutes;
  private keepalive: Keepalive | undefined;
  private corked = false;
  private readPauses = 0;
  private closing = false;
  private downError: Error | undefined;
  private down = false;

  constructor(
    private readonly stream: Duplex,
    options: RpcClientOptions,
  ) {
    super();
    this.host = options.host;
    this.messages = new MessageRoutes(options.logger);
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULTS.callTimeoutMs;
    this.calls = new CallTable(
      {
        host: this.host,
        write: (frame) => this.write(frame),
        kill: (reason) => this.destroy(reason),
        isDown: () => this.down,
      },
      {
        maxInFlight: options.maxInFlight ?? DEFAULTS.maxInFlight,
        tracer: options.tracer,
        logger: options.logger,
      },
    );
    this.decoder = new FrameDecoder((h, p) => this.onFrame(h, p));
    this.channel = {
      host: this.host,
      link: stream,
      stallMs: options.streamStallMs ?? DEFAULTS.streamStallMs,
      isDown: () => this.down,
      open: (proc, args, sink, opts) => this.openStream(proc, args, sink, opts),
      forget: (serial) => this.streams.delete(serial),
      write: (frame) => this.write(frame),
      destroy: (reason) => this.destroy(reason),
      pauseReads: () => this.pauseReads(),
      resumeReads: () => this.resumeReads(),
    };
    stream.on('data', (chunk: Buffer) => {
      this.keepalive?.received();
      // Replies often arrive several to a read, and each releases a queued call: the frames
      // written meanwhile leave in one writev.
      stream.cork();
      try {
        this.decoder.push(chunk);
      } catch (err) {
        this.destroy(err instanceof Error ? err : new ProtocolError(String(err)));
      } finally {
        stream.uncork();
      }
    });
    stream.on('error', (err) => this.linkDown(err));
    stream.on('end', () => this.linkDown(undefined));
    stream.on('close', () => this.linkDown(undefined));
  }

  /** True once the link is gone: no call on this client can succeed any more. */
  get isDown(): boolean {
    return this.down;
  }

  get inFlight(): number {
    return this.calls.inFlight;
  }

  /** Starts pinging when idle and answering is already on; called once the daemon agreed. */
  startKeepalive(options: KeepaliveOptions): void {
    this.keepalive?.stop();
    this.keepalive = new Keepalive(options, {
      ping: (frame) => this.write(frame),
      dead: (err) => this.destroy(new LinkInterruptedError(`${this.host}: ${err.message}`)),
    });
  }

  call<A, R>(proc: Procedure<A, R>, args: A, options?: CallOptions): Promise<R> {
    const signal = options?.signal;
    // Not from a turn that follows a freeze: the timers that would abort the signal (a lost
    // lease's) run first (loop-freeze.ts).
    if (signal !== undefined && !signal.aborted && loopFroze()) {
      return afterTimers().then(() => this.call(proc, args, options));
    }
    if (signal?.aborted) {
      return Promise.reject(new CallAbortedError(proc.name, false, { cause: signal.reason }));
    }
    if (this.down) return Promise.reject(this.downReason(proc.name));
    return this.calls.submit(
      proc,
      args,
      signal,
      options?.timeoutMs ?? this.callTimeoutMs,
      options?.burst === true,
    );
  }

  /**
   * Runs a @writestream procedure (StorageVolUpload) with `source` as its data
   * (stream-transfer.ts).
   */
  upload<A>(
    proc: Procedure<A, unknown>,
    args: A,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options?: StreamOptions,
  ): Promise<void> {
    return uploadStream(this.channel, proc, args, source, options);
  }

  /** Runs a @readstream procedure (StorageVolDownload) and yields the data (stream-transfer.ts). */
  download<A>(
    proc: Procedure<A, unknown>,
    args: A,
    options?: StreamOptions,
  ): AsyncGenerator<Buffer, void, undefined> {
    return downloadStream(this.channel, proc, args, options);
  }

  /**
   * A download whose consumer lags stops the link's reads. Keepalive must not take that
   * silence for a dead daemon, so it holds while any download holds the link.
   */
  pauseReads(): void {
    if (this.readPauses++ === 0) {
      this.stream.pause();
      this.keepalive?.hold(true);
    }
  }

  resumeReads(): void {
    if (this.readPauses > 0 && --this.readPauses === 0) {
      this.keepalive?.hold(false);
      this.stream.resume();
    }
  }

  /** Ends the link without a goodbye; every call still waiting fails with `reason`. */
  destroy(reason?: Error): void {
    if (this.down) return;
    this.linkDown(reason ?? new LinkClosedError(`${this.host}: connection closed`));
    this.stream.destroy();
  }

  /** Marks the link as closing on purpose, so the EOF after ConnectClose is not an error. */
  expectClose(): void {
    this.closing = true;
  }

  // ---- internals -------------------------------------------------------------------------

  // A lone call goes out at once. With others in flight, the calls made in the same tick
  // (callers resuming after a batch of replies) leave together in one writev.
  private write(frame: Buffer): void {
    if (this.down) return;
    if (!this.corked && this.calls.inFlight > 1) {
      this.corked = true;
      this.stream.cork();
      process.nextTick(this.uncork);
    }
    this.stream.write(frame);
    const queued = this.stream.writableLength;
    if (queued > QUEUED_WRITE_MAX) {
      this.destroy(
        new LinkInterruptedError(`${this.host}: libvirtd stopped reading, ${queued} bytes queued`),
      );
    }
  }

  // The daemon counts any packet as life (LIBVIRT-RPC-FACTS §6): bytes still queued reach it
  // before a PONG would, and a peer that pings without reading would otherwise queue one per PING.
  private readonly pong = (frame: Buffer): void => {
    if (this.stream.writableLength === 0) this.write(frame);
  };

  private readonly uncork = (): void => {
    this.corked = false;
    this.stream.uncork();
  };

  private onFrame(h: PacketHeader, payload: Buffer): void {
    if (h.prog === KEEPALIVE_PROGRAM) {
      Keepalive.answer(h, this.pong);
      return;
    }
    if (h.prog !== REMOTE_PROGRAM) return; // another program's events: not ours to handle
    if (h.type === MessageType.REPLY) this.onReply(h, payload);
    else if (h.type === MessageType.STREAM || h.type === MessageType.STREAM_HOLE) {
      this.onStream(h, payload);
    } else if (h.type === MessageType.MESSAGE) this.onMessage(h, payload);
  }

  /**
   * Hands each MESSAGE the daemon sends for `proc` (an event: type MESSAGE, serial 0) to
   * `handler`, decoded. Returns the unsubscribe. Registering with the daemon is the caller's
   * call (domain-events.ts); without it the daemon sends nothing.
   */
  subscribe<M>(proc: Procedure<void, M>, handler: (message: M) => void): () => void {
    return this.messages.subscribe(proc, handler);
  }

  private onMessage(h: PacketHeader, payload: Buffer): void {
    const broken = this.messages.deliver(h.proc, payload);
    if (broken !== undefined) this.destroy(broken);
  }

  private onReply(h: PacketHeader, payload: Buffer): void {
    const call = this.calls.take(h.serial);
    if (call === undefined) return; // a reply for a call already failed: never surfaces
    if (call.proc.proc !== h.proc) {
      this.calls.settle(
        call,
        new ProtocolError(`reply for serial ${h.serial} names proc ${h.proc}`),
      );
      return;
    }
    if (h.status === MessageStatus.OK) {
      let value: unknown;
      try {
        const r = new XdrReader(payload);
        value = call.proc.decode(r);
        r.expectEnd(`${call.proc.name} reply`);
      } catch (err) {
        this.calls.settle(
          call,
          new ProtocolError(`${call.proc.name} reply: ${(err as Error).message}`),
        );
        return;
      }
      this.calls.settle(call, undefined, value);
    } else if (h.status === MessageStatus.ERROR) {
      this.calls.settle(call, remoteErrorOf(call.proc.name, payload));
    } else {
      this.calls.settle(call, new ProtocolError(`reply with status ${h.status}`));
    }
  }

  private onStream(h: PacketHeader, payload: Buffer): void {
    const sink = this.streams.get(h.serial);
    if (sink === undefined) return; // late packets after a stream ended are dropped (libvirt does too)
    if (h.type === MessageType.STREAM_HOLE) {
      // As for any frame the daemon should never send: the link is not to be trusted.
      const err = new ProtocolError(
        'sparse stream hole received, but sparse streams were not asked for',
      );
      sink.fail(err);
      this.destroy(err);
    } else if (h.status === MessageStatus.CONTINUE) sink.data(payload);
    else if (h.status === MessageStatus.OK) sink.finish();
    else sink.refuse(remoteErrorOf(`stream of proc ${h.proc}`, payload));
  }

  private async openStream<A>(
    proc: Procedure<A, unknown>,
    args: A,
    sink: StreamSink,
    options?: CallOptions,
  ): Promise<number> {
    // As call() does, before the serial is taken: no other call may take it meanwhile.
    const signal = options?.signal;
    if (signal !== undefined && !signal.aborted && loopFroze()) await afterTimers();
    // The serial is registered before the call goes out: a stream error can follow the reply
    // in the same read.
    const serial = this.calls.upcomingSerial;
    this.streams.set(serial, sink);
    try {
      await this.call(proc, args, options);
    } catch (err) {
      // A call refused before it took the serial (its signal had fired) leaves it to the next
      // call, whose sink may already be there.
      if (this.streams.get(serial) === sink) this.streams.delete(serial);
      throw err;
    }
    return serial;
  }

  private downReason(procedure: string): Error {
    return new LinkInterruptedError(`${this.host}: link is down, ${procedure} not sent`, {
      cause: this.downError,
    });
  }

  private linkDown(err: Error | undefined): void {
    if (this.down) return;
    this.down = true;
    this.keepalive?.stop();
    const reason =
      err ??
      (this.closing
        ? new LinkClosedError(`${this.host}: connection closed`)
        : new LinkInterruptedError(`${this.host}: libvirtd closed the connection`));
    this.downError = reason;
    const interrupted =
      reason instanceof LinkInterruptedError || reason instanceof LinkClosedError
        ? reason
        : new LinkInterruptedError(`${this.host}: link failed: ${reason.message}`, {
            cause: reason,
          });
    this.calls.failAll(interrupted);
    for (const sink of this.streams.values()) sink.fail(interrupted);
    this.streams.clear();
    this.emit('close', this.closing ? undefined : reason);
  }
}
