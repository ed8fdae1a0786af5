// The calls of one link: serials, the window of calls on the wire, one timer for every call's
// budget, and the abandon policy of SPEC §4. libvirt cannot cancel a call: one whose signal
// fires or whose budget runs out while on the wire kills the link (its reply would otherwise
// arrive for nobody, and the daemon may still be working on it); calls still queued here have
// not reached the daemon and fail alone.
import type { Span, Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { CallAbortedError, InvalidArgumentError, LinkInterruptedError } from './errors.js';
import { MessageStatus, MessageType, packetWriter, sealPacket } from './packet.js';
import { SPAN_STATUS_ERROR } from './tracing.js';
import type { Procedure } from './procedure.js';

type AnyProcedure = Procedure<any, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The window of a burst call (CallOptions.burst): libvirtd reads 5 requests ahead of its
 * replies; the rest wait in the socket, so the daemon never waits a round trip for the next
 * one. Only for quick reads sent many at once: while more than 4 are outstanding the daemon
 * does not read the link, our keepalive answers included, which is safe only for calls that
 * end in milliseconds (docs/libvirt-client.md).
 */
export const BURST_IN_FLIGHT = 32;

export class PendingCall {
  serial = 0;
  /** performance.now() past which the call is abandoned; Infinity for none. */
  deadline = Infinity;
  span: Span | undefined = undefined;
  started = 0;
  sent = false;
  done = false;
  frame: Buffer | undefined = undefined;

  constructor(
    readonly proc: AnyProcedure,
    readonly signal: AbortSignal | undefined,
    readonly resolve: (v: unknown) => void,
    readonly reject: (e: Error) => void,
    /** How many calls may be on the wire, this one included, for it to be sent. */
    readonly window: number,
  ) {}
}

/** What the table needs of its link. */
export interface CallLink {
  readonly host: string;
  write(frame: Buffer): void;
  /** A call on the wire was abandoned: the link must go. */
  kill(reason: Error): void;
  isDown(): boolean;
}

export interface CallTableOptions {
  readonly maxInFlight: number;
  /** None: no spans. */
  readonly tracer: Tracer | undefined;
  readonly logger: Logger | undefined;
}

/** The calls waiting on one signal, and the one listener that abandons them when it fires. */
interface SignalWatch {
  readonly calls: Set<PendingCall>;
  readonly onAbort: () => void;
}

/** More signals watched than this and those with no call left lose their listener. */
const WATCHED_SIGNALS_MAX = 64;

export class CallTable {
  private readonly pending = new Map<number, PendingCall>();
  // One abort listener per signal, not per call: a job's run passes its signal to each of its
  // calls, and an EventTarget's add and remove cost ~0.5 µs each (bench/queue's profile: ~4 µs a
  // job for four calls). A signal's listener stays while the signal has calls here or the table
  // watches few signals; past WATCHED_SIGNALS_MAX, the idle ones are let go.
  private readonly watched = new Map<AbortSignal, SignalWatch>();
  private readonly queue: PendingCall[] = [];
  private nextSerial = 1;
  // One timer for every call's budget, armed for the earliest deadline (a timer per call costs
  // more than the rest of the call's bookkeeping together).
  private deadlineTimer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;

  constructor(
    private readonly link: CallLink,
    private readonly options: CallTableOptions,
  ) {}

  get inFlight(): number {
    return this.pending.size;
  }

  /** The serial the next call gets: a stream registers its sink under it before the call. */
  get upcomingSerial(): number {
    return this.nextSerial;
  }

  /** Encodes the call and sends it, or queues it while the window is full. */
  submit<A, R>(
    proc: Procedure<A, R>,
    args: A,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    burst = false,
  ): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const window = burst
        ? Math.max(BURST_IN_FLIGHT, this.options.maxInFlight)
        : this.options.maxInFlight;
      const call = new PendingCall(proc, signal, resolve as (v: unknown) => void, reject, window);
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
      this.begin(call, timeoutMs);
      if (this.queue.length === 0 && this.pending.size < call.window) this.send(call);
      else this.queue.push(call);
    });
  }

  /** The call a reply is for, taken off the wire; undefined for one already failed. */
  take(serial: number): PendingCall | undefined {
    const call = this.pending.get(serial);
    if (call !== undefined) this.pending.delete(serial);
    return call;
  }

  settle(call: PendingCall, err: Error | undefined, value?: unknown): void {
    if (call.done) return;
    call.done = true;
    if (call.signal !== undefined) this.watched.get(call.signal)?.calls.delete(call);
    const ms = performance.now() - call.started;
    if (err === undefined) {
      call.span?.end();
      call.resolve(value);
    } else {
      call.span?.recordException(err);
      call.span?.setStatus({ code: SPAN_STATUS_ERROR, message: err.message });
      call.span?.end();
      call.reject(err);
    }
    const logger = this.options.logger;
    if (logger?.isLevelEnabled('debug') === true) {
      logger.debug(
        {
          host: this.link.host,
          procedure: call.proc.name,
          durationMs: Math.round(ms * 1000) / 1000,
          outcome: err === undefined ? 'ok' : ((err as { code?: string }).code ?? err.name),
        },
        'libvirt call',
      );
    }
    if (call.sent && !this.link.isDown()) this.pump();
  }

  /** The link is gone: every call, sent or queued, fails with `err`. */
  failAll(err: Error): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    for (const [signal, watch] of this.watched) signal.removeEventListener('abort', watch.onAbort);
    this.watched.clear();
    const calls = [...this.pending.values(), ...this.queue];
    this.pending.clear();
    this.queue.length = 0;
    for (const call of calls) this.settle(call, err);
  }

  private takeSerial(): number {
    const s = this.nextSerial;
    this.nextSerial = s === 0xffffffff ? 1 : s + 1;
    return s;
  }

  private begin(call: PendingCall, timeoutMs: number): void {
    call.started = performance.now();
    call.span = this.options.tracer?.startSpan(`kvm2.${call.proc.name}`, {
      attributes: {
        'rpc.system': 'libvirt',
        'rpc.method': call.proc.name,
        'kvm2.host': this.link.host,
      },
    });
    if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
      call.deadline = call.started + timeoutMs;
      if (call.deadline < this.armedFor) this.armDeadline(call.deadline);
    }
    if (call.signal !== undefined) this.watch(call, call.signal);
  }

  private watch(call: PendingCall, signal: AbortSignal): void {
    let watch = this.watched.get(signal);
    if (watch === undefined) {
      if (this.watched.size >= WATCHED_SIGNALS_MAX) this.unwatchIdle();
      const calls = new Set<PendingCall>();
      const onAbort = (): void => {
        this.watched.delete(signal);
        for (const waiting of [...calls]) this.abandon(waiting, false);
      };
      watch = { calls, onAbort };
      this.watched.set(signal, watch);
      signal.addEventListener('abort', onAbort, { once: true });
    }
    watch.calls.add(call);
  }

  private unwatchIdle(): void {
    for (const [signal, watch] of this.watched) {
      if (watch.calls.size > 0) continue;
      signal.removeEventListener('abort', watch.onAbort);
      this.watched.delete(signal);
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
    if (this.link.isDown()) return;
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
    if (frame !== undefined) this.link.write(frame);
  }

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
    this.link.kill(
      new LinkInterruptedError(
        `${this.link.host}: link dropped because call ${call.proc.name} was abandoned`,
        { cause: err },
      ),
    );
    this.settle(call, err);
  }

  private pump(): void {
    // In order: a call waits for the calls queued before it, whatever their windows.
    for (let next = this.queue[0]; next !== undefined; next = this.queue[0]) {
      if (this.pending.size >= next.window) break;
      this.queue.shift();
      this.send(next);
    }
  }
}
