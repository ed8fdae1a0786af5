// A transport turns a parsed libvirt URI into a byte stream to the daemon's socket. The RPC
// engine above it never knows whether the bytes cross SSH.
import type { Duplex } from 'node:stream';

export interface Link {
  /** Bytes to and from libvirtd. */
  readonly stream: Duplex;
  /** Tears down everything the dial made (the SSH session too). Idempotent. */
  close(): void;
}

export interface DialOptions {
  readonly signal?: AbortSignal | undefined;
  /** Budget for the whole dial, ms. */
  readonly timeoutMs?: number | undefined;
}
