// libvirt keepalive (src/rpc/virkeepalive.c, LIBVIRT-RPC-FACTS §6):
//   PING/PONG = prog 0x6b656570 "keep", vers 1, proc 1|2, type MESSAGE(2), serial 0, status OK,
//   empty payload (28 bytes). Either side may ping; the receiver answers; PONGs go unanswered.
// The daemon pings only after CONNECT_SUPPORTS_FEATURE(PROGRAM_KEEPALIVE) and drops a client
// silent for ~30 s. We answer its pings, ping when we have heard nothing for `intervalMs`, and
// declare the link dead after `count` intervals of silence (any packet counts as life).
import { LinkInterruptedError } from './errors.js';
import { MessageStatus, MessageType, encodePrefix, type PacketHeader } from './packet.js';
import {
  KEEPALIVE_PROC_PING,
  KEEPALIVE_PROC_PONG,
  KEEPALIVE_PROGRAM,
  KEEPALIVE_PROTOCOL_VERSION,
} from './protocol.gen.js';

export interface KeepaliveOptions {
  /** Silence after which we ping, ms (virsh: 5 s). */
  readonly intervalMs: number;
  /** Unanswered intervals before the link is declared dead (virsh: 6). */
  readonly count: number;
}

export const KEEPALIVE_DEFAULTS: KeepaliveOptions = Object.freeze({ intervalMs: 5000, count: 6 });

function keepaliveFrame(proc: number): Buffer {
  return encodePrefix(
    {
      prog: KEEPALIVE_PROGRAM,
      vers: KEEPALIVE_PROTOCOL_VERSION,
      proc,
      type: MessageType.MESSAGE,
      serial: 0,
      status: MessageStatus.OK,
    },
    0,
  );
}

const PING = keepaliveFrame(KEEPALIVE_PROC_PING);
const PONG = keepaliveFrame(KEEPALIVE_PROC_PONG);

interface KeepaliveIo {
  ping(frame: Buffer): void;
  dead(err: Error): void;
}

export class Keepalive {
  private lastHeard = Date.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly options: KeepaliveOptions,
    private readonly io: KeepaliveIo,
  ) {
    const tick = Math.max(10, Math.floor(options.intervalMs / 2));
    this.timer = setInterval(() => this.check(), tick);
    this.timer.unref();
  }

  /** Answers a PING whether or not we keep a timer ourselves (the daemon may ping anyway). */
  static answer(h: PacketHeader, write: (frame: Buffer) => void): void {
    if (h.type === MessageType.MESSAGE && h.proc === KEEPALIVE_PROC_PING) write(PONG);
  }

  received(): void {
    this.lastHeard = Date.now();
  }

  /**
   * While held (we stopped reading on purpose) silence proves nothing: no verdict. We still
   * ping each interval, since the daemon closes a client it hears nothing from for 30 s.
   */
  hold(on: boolean): void {
    this.held = on;
    if (!on) this.lastHeard = Date.now();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private lastPing = 0;
  private held = false;

  private check(): void {
    const now = Date.now();
    const silent = now - this.lastHeard;
    const { intervalMs, count } = this.options;
    if (!this.held && silent >= intervalMs * count) {
      this.stop();
      this.io.dead(new LinkInterruptedError(`libvirtd silent for ${silent} ms: keepalive gave up`));
      return;
    }
    if (silent >= intervalMs && now - this.lastPing >= intervalMs) {
      this.lastPing = now;
      this.io.ping(PING);
    }
  }
}
