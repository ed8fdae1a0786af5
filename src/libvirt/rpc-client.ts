// The RPC engine: one link, many calls in flight matched by serial, streams, keepalive, and
// the abandon policy of SPEC §4. It never dials; it is handed a byte stream (UNIX socket or SSH
// channel) and owns it until it closes.
//
// Abandon policy: libvirt cannot cancel a call. A call whose signal fires or whose budget runs
// out while on the wire kills the link (its reply would otherwise arrive for nobody, and the
// daemon may still be working on it); the other calls on the link fail once as interrupted and
// the owner (HostTable) dials a new link for the next call. Calls still queued locally have not
// reached the daemon: they fail alone, and the link stays.
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import {
  CallAbortedError,
  InvalidArgumentError,
  LibvirtError,
  LinkClosedError,
  LinkInterruptedError,
  ProtocolError,
} from './errors.js';
import { Keepalive, type KeepaliveOptions } from './keepalive.js';
import {
  FrameDecoder,
  MessageStatus,
  MessageType,
  encodePrefix,
  packetWriter,
  sealPacket,
  type PacketHeader,
} from './packet.js';
import type { Procedure } from './procedure.js';
import { KEEPALIVE_PROGRAM, REMOTE_PROGRAM, decodeRemoteError } from './protocol.gen.js';
import { DownloadSink, UploadPacketizer, UploadSink, type StreamSink } from './streams.js';
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
  readonly logger?: Logger | undefined;
  readonly tracer?: Tracer | undefined;
}

export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
  /** This call's budget, ms; overrides the client's default. */
  readonly timeoutMs?: number | undefined;
}

const DEFAULTS = Object.freeze({ maxInFlight: 4, callTimeoutMs: 60_000 });
/** Upload data queued in the socket before we wait for it to drain. */
const UPLOAD_BUFFER_BYTES = 1024 * 1024;

type AnyProcedure = Procedure<any, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

class PendingCall {
  serial = 0;
  /** performance.now() past which the call is abandoned; Infinity for none. */
  deadline = Infinity;
  span: Span | undefined = undefined;
  started = 0;
  onAbort: (() => void) | undefined = undefined;
  sent = false;
  done = false;
  frame: Buffer | undefined = undefined;

  constructor(
    readonly proc: AnyProcedure,
    readonly signal: AbortSignal | undefined,
    readonly resolve: (v: unknown) => void,
    readonly reject: (e: Error) => void,
  ) {}
}

export class RpcClient extends EventEmitter<{ close: [Error | undefined] }> {
  readonly host: string;
  private readonly maxInFlight: number;
  private readonly callTimeoutMs: number;
  private readonly logger: Logger | undefined;
  private readonly tracer: Tracer;
  private readonly decoder: FrameDecoder;
  private readonly pending = new Map<number, PendingCall>();
  private readonly queue: PendingCall[] = [];
  private readonly streams = new Map<number, StreamSink>();
  private keepalive: Keepalive | undefined;
  // One timer for every call's budget, armed for the earliest deadline (a timer per call costs
  // more than the rest of the call's bookkeeping together).
  private deadlineTimer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;
  private nextSerial = 1;
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
    this.maxInFlight = options.maxInFlight ?? DEFAULTS.maxInFlight;
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULTS.callTimeoutMs;
    this.logger = options.logger;
    this.tracer = options.tracer ?? trace.getTracer('kvm2');
    this.decoder = new FrameDecoder((h, p) => this.onFrame(h, p));
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
    return this.pending.size;
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
    return new Promise<R>((resolve, reject) => {
      const signal = options?.signal;
      if (signal?.aborted) {
        reject(new CallAbortedError(proc.name, false, { cause: signal.reason }));
        return;
      }
      if (this.down) {
        reject(this.downReason(proc.name));
        return;
      }
      const call = new PendingCall(proc, signal, resolve as (v: unknown) => void, reject);
      try {
        call.serial = this.takeSerial();
        const w = packetWriter();
        proc.encode(w, args);
        call.frame = sealPacket(w, {
          prog: proc.program,
          vers: proc.version,
          proc: proc.proc,
          type: MessageType.CALL,
          serial: call.serial,
          status: MessageStatus.OK,
        });
      } catch (err) {
        reject(new InvalidArgumentError(`${proc.name}: ${(err as Error).message}`, { cause: err }));
        return;
      }
      this.begin(call, options?.timeoutMs ?? this.callTimeoutMs);
      if (this.pending.size < this.maxInFlight) this.send(call);
      else this.queue.push(call);
    });
  }

  /**
   * Runs a @writestream procedure (StorageVolUpload): the call, then `source` as stream data in
   * chunks libvirt always accepts, with socket back-pressure, then the finish handshake. Memory
   * in flight stays at one chunk of `source` plus the socket's buffer, whatever the size.
   */
  async upload<A>(
    proc: Procedure<A, unknown>,
    args: A,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options?: CallOptions,
  ): Promise<void> {
    const sink = new UploadSink();
    const serial = await this.openStream(proc, args, sink, options);
    const signal = options?.signal;
    const onAbort = (): void => {
      sink.fail(new CallAbortedError(proc.name, false, { cause: signal?.reason }));
      this.destroy(new LinkInterruptedError(`${this.host}: upload ${proc.name} was abandoned`));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      const header: PacketHeader = {
        prog: proc.program,
        vers: proc.version,
        proc: proc.proc,
        type: MessageType.STREAM,
        serial,
        status: MessageStatus.CONTINUE,
      };
      const packets = new UploadPacketizer(header, (frames) => {
        if (frames.length === 1) this.stream.write(frames[0]);
        else {
          this.stream.cork();
          for (const f of frames) this.stream.write(f);
          this.stream.uncork();
        }
      });
      for await (const chunk of source) {
        sink.throwIfFailed();
        packets.push(chunk);
        // Socket back-pressure with a little slack: waiting for a full drain after every
        // packet would leave the daemon idle between packets. 'drain' comes only after a
        // write was refused (an SSH channel accepts up to 2 MiB before it refuses).
        const { writableNeedDrain, writableLength } = this.stream;
        if (writableNeedDrain && writableLength > UPLOAD_BUFFER_BYTES) await this.drained(sink);
      }
      packets.flush();
      sink.throwIfFailed();
      this.write(encodePrefix({ ...header, status: MessageStatus.OK }, 0));
      await sink.finished;
    } catch (err) {
      // The source failed (or we did) with the daemon's stream still open: without a finish
      // the daemon would keep the volume busy until the link closed. Closing it is the abort.
      // A failure the daemon reported has already closed its side.
      if (!this.down && !sink.failed) {
        this.destroy(
          new LinkInterruptedError(`${this.host}: upload ${proc.name} failed before its end`, {
            cause: err,
          }),
        );
      }
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.streams.delete(serial);
    }
  }

  /**
   * Runs a @readstream procedure (StorageVolDownload) and yields the data. The link is paused
   * while the consumer lags, so memory stays bounded. Ends with the finish handshake
   * (go-libvirt skips it and leaves the daemon's stream open: LIBVIRT-RPC-FACTS §5).
   */
  async *download<A>(
    proc: Procedure<A, unknown>,
    args: A,
    options?: CallOptions,
  ): AsyncGenerator<Buffer, void, undefined> {
    const sink = new DownloadSink(this);
    const serial = await this.openStream(proc, args, sink, options);
    const signal = options?.signal;
    const onAbort = (): void => {
      sink.fail(new CallAbortedError(proc.name, false, { cause: signal?.reason }));
      this.destroy(new LinkInterruptedError(`${this.host}: download ${proc.name} was abandoned`));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      for (;;) {
        const chunk = await sink.next();
        if (chunk === null) break;
        yield chunk;
      }
      this.write(
        encodePrefix(
          {
            prog: proc.program,
            vers: proc.version,
            proc: proc.proc,
            type: MessageType.STREAM,
            serial,
            status: MessageStatus.OK,
          },
          0,
        ),
      );
      await sink.finished;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.streams.delete(serial);
      sink.release();
    }
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

  private takeSerial(): number {
    const s = this.nextSerial;
    this.nextSerial = s === 0xffffffff ? 1 : s + 1;
    return s;
  }

  private begin(call: PendingCall, timeoutMs: number): void {
    call.started = performance.now();
    call.span = this.tracer.startSpan(`kvm2.${call.proc.name}`, {
      attributes: { 'rpc.system': 'libvirt', 'rpc.method': call.proc.name, 'kvm2.host': this.host },
    });
    if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
      call.deadline = call.started + timeoutMs;
      if (call.deadline < this.armedFor) this.armDeadline(call.deadline);
    }
    if (call.signal !== undefined) {
      call.onAbort = () => this.abandon(call, false);
      call.signal.addEventListener('abort', call.onAbort, { once: true });
    }
  }

  private armDeadline(at: number): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.armedFor = at;
    this.deadlineTimer = setTimeout(() => this.expire(), Math.max(0, at - performance.now()) + 1);
    this.deadlineTimer.unref();
  }

  // Abandons every call past its deadline, then re-arms for the earliest one left.
  private expire(): void {
    this.deadlineTimer = undefined;
    this.armedFor = Infinity;
    const now = performance.now();
    for (const call of [...this.queue, ...this.pending.values()]) {
      if (call.deadline <= now) this.abandon(call, true);
    }
    if (this.down) return;
    let next = Infinity;
    for (const call of this.pending.values()) next = Math.min(next, call.deadline);
    for (const call of this.queue) next = Math.min(next, call.deadline);
    if (next !== Infinity) this.armDeadline(next);
  }

  private send(call: PendingCall): void {
    call.sent = true;
    this.pending.set(call.serial, call);
    const frame = call.frame;
    call.frame = undefined;
    if (frame !== undefined) this.write(frame);
  }

  // A lone call goes out at once. With others in flight, the calls made in the same tick
  // (callers resuming after a batch of replies) leave together in one writev.
  private write(frame: Buffer): void {
    if (this.down) return;
    if (!this.corked && this.pending.size > 1) {
      this.corked = true;
      this.stream.cork();
      process.nextTick(this.uncork);
    }
    this.stream.write(frame);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.stream.uncork();
  };

  private abandon(call: PendingCall, timedOut: boolean): void {
    if (call.done) return;
    const err = new CallAbortedError(call.proc.name, timedOut, {
      cause: timedOut ? undefined : call.signal?.reason,
    });
    if (!call.sent) {
      const i = this.queue.indexOf(call);
      if (i >= 0) this.queue.splice(i, 1);
      this.settle(call, err);
      return;
    }
    // The link goes down first, so settling this call cannot send a queued one onto it.
    this.pending.delete(call.serial);
    this.destroy(
      new LinkInterruptedError(
        `${this.host}: link dropped because call ${call.proc.name} was abandoned`,
        { cause: err },
      ),
    );
    this.settle(call, err);
  }

  private settle(call: PendingCall, err: Error | undefined, value?: unknown): void {
    if (call.done) return;
    call.done = true;
    if (call.onAbort !== undefined) call.signal?.removeEventListener('abort', call.onAbort);
    const ms = performance.now() - call.started;
    if (err === undefined) {
      call.span?.end();
      call.resolve(value);
    } else {
      call.span?.recordException(err);
      call.span?.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
      call.span?.end();
      call.reject(err);
    }
    if (this.logger?.isLevelEnabled('debug') === true) {
      this.logger.debug(
        {
          host: this.host,
          procedure: call.proc.name,
          durationMs: Math.round(ms * 1000) / 1000,
          outcome: err === undefined ? 'ok' : ((err as { code?: string }).code ?? err.name),
        },
        'libvirt call',
      );
    }
    if (call.sent && !this.down) this.pump();
  }

  private pump(): void {
    while (this.pending.size < this.maxInFlight && this.queue.length > 0) {
      const next = this.queue.shift();
      if (next !== undefined) this.send(next);
    }
  }

  private onFrame(h: PacketHeader, payload: Buffer): void {
    if (h.prog === KEEPALIVE_PROGRAM) {
      this.keepalive?.onMessage(h);
      if (this.keepalive === undefined) Keepalive.answer(h, (f) => this.write(f));
      return;
    }
    if (h.prog !== REMOTE_PROGRAM) return; // another program's events: not ours to handle
    if (h.type === MessageType.REPLY) this.onReply(h, payload);
    else if (h.type === MessageType.STREAM || h.type === MessageType.STREAM_HOLE) {
      this.onStream(h, payload);
    }
    // type MESSAGE with serial 0 is an event; kvm2 registers for none.
  }

  private onReply(h: PacketHeader, payload: Buffer): void {
    const call = this.pending.get(h.serial);
    if (call === undefined) return; // a reply for a call already failed: never surfaces
    this.pending.delete(h.serial);
    if (call.proc.proc !== h.proc) {
      this.settle(call, new ProtocolError(`reply for serial ${h.serial} names proc ${h.proc}`));
      return;
    }
    if (h.status === MessageStatus.OK) {
      let value: unknown;
      try {
        const r = new XdrReader(payload);
        value = call.proc.decode(r);
        r.expectEnd(`${call.proc.name} reply`);
      } catch (err) {
        this.settle(call, new ProtocolError(`${call.proc.name} reply: ${(err as Error).message}`));
        return;
      }
      this.settle(call, undefined, value);
    } else if (h.status === MessageStatus.ERROR) {
      this.settle(call, this.decodeError(call.proc.name, payload));
    } else {
      this.settle(call, new ProtocolError(`reply with status ${h.status}`));
    }
  }

  private onStream(h: PacketHeader, payload: Buffer): void {
    const sink = this.streams.get(h.serial);
    if (sink === undefined) return; // late packets after a stream ended are dropped (libvirt does too)
    if (h.type === MessageType.STREAM_HOLE) {
      sink.fail(
        new ProtocolError('sparse stream hole received, but sparse streams were not asked for'),
      );
    } else if (h.status === MessageStatus.CONTINUE) sink.data(payload);
    else if (h.status === MessageStatus.OK) sink.finish();
    else sink.fail(this.decodeError(`stream of proc ${h.proc}`, payload));
  }

  private decodeError(procedure: string, payload: Buffer): Error {
    try {
      const e = decodeRemoteError(new XdrReader(payload));
      // No stack: it would only show this read loop, and "no such domain" is an everyday
      // answer whose stack capture cost showed in bench/queue's profile.
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      try {
        return new LibvirtError(
          e.message ?? `libvirt error ${e.code}`,
          e.code,
          e.domain,
          e.level,
          procedure,
          e.int1,
        );
      } finally {
        Error.stackTraceLimit = limit;
      }
    } catch (err) {
      return new ProtocolError(
        `${procedure}: undecodable error payload: ${(err as Error).message}`,
      );
    }
  }

  private async openStream<A>(
    proc: Procedure<A, unknown>,
    args: A,
    sink: StreamSink,
    options?: CallOptions,
  ): Promise<number> {
    // The serial is registered before the call goes out: a stream error can follow the reply
    // in the same read.
    const serial = this.nextSerial;
    this.streams.set(serial, sink);
    try {
      await this.call(proc, args, options);
    } catch (err) {
      this.streams.delete(serial);
      throw err;
    }
    return serial;
  }

  private drained(sink: UploadSink): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error): void => {
        this.stream.off('drain', onDrain);
        sink.offFail(onFail);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onDrain = (): void => done();
      const onFail = (err: Error): void => done(err);
      this.stream.on('drain', onDrain);
      sink.onFail(onFail);
    });
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
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
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
    const calls = [...this.pending.values(), ...this.queue];
    this.pending.clear();
    this.queue.length = 0;
    for (const call of calls) this.settle(call, interrupted);
    for (const sink of this.streams.values()) sink.fail(interrupted);
    this.streams.clear();
    this.emit('close', this.closing ? undefined : reason);
  }
}
