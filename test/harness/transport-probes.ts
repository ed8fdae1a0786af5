// What the transport tests read a link with and dial into: AUTH_LIST, a call libvirtd answers
// before any authentication, written raw and its reply frame read back; a dial that must fail,
// as the DialError it gives; a stream's close; a listener that never speaks.
import type { PacketHeader } from '../../src/libvirt/packet.js';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { expect } from 'vitest';
import { DialError } from '../../src/libvirt/transport/dial-error.js';
import { dialSsh } from '../../src/libvirt/transport/ssh.js';
import type { DialOptions } from '../../src/libvirt/transport/types.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';

// REMOTE_PROC_AUTH_LIST (66) as a call: len 28, prog 0x20008086, vers 1, proc 0x42,
// type 0 (call), serial 1, status 0, no arguments.
const AUTH_LIST_CALL = Buffer.from(
  '0000001c' + '20008086' + '00000001' + '00000042' + '00000000' + '00000001' + '00000000',
  'hex',
);

/** A reply's frame header as read off the wire: its length word, then libvirt's header. */
export interface ReplyHeader extends PacketHeader {
  length: number;
}

/** Writes AUTH_LIST and reads one whole reply frame back. */
export async function authList(stream: Duplex): Promise<ReplyHeader> {
  let buf = Buffer.alloc(0);
  const frame = await new Promise<Buffer>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no reply within 5 s')), 5_000);
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length >= 4 && buf.length >= buf.readUInt32BE(0)) done(null, buf);
    };
    const onClose = (): void => done(new Error('stream closed before the reply'));
    const done = (err: Error | null, frame?: Buffer): void => {
      clearTimeout(timer);
      stream
        .removeListener('data', onData)
        .removeListener('error', done)
        .removeListener('close', onClose);
      if (err === null && frame !== undefined) resolve(frame);
      else reject(err ?? new Error('no frame'));
    };
    stream.on('data', onData).once('error', done).once('close', onClose);
    stream.write(AUTH_LIST_CALL);
  });
  const word = (i: number): number => frame.readUInt32BE(i * 4);
  return {
    length: word(0),
    prog: word(1),
    vers: word(2),
    proc: word(3),
    type: word(4),
    serial: word(5),
    status: word(6),
  };
}

export const AUTH_LIST_REPLY = {
  prog: 0x20008086,
  vers: 1,
  proc: 0x42,
  type: 1,
  serial: 1,
  status: 0,
};

export async function dialFails(uri: string, opts: DialOptions = {}): Promise<DialError> {
  const outcome = await dialSsh(parseLibvirtUri(uri), opts).then(
    (link) => {
      link.close();
      return new Error('dial unexpectedly succeeded');
    },
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(DialError);
  return outcome as DialError;
}

export function waitForClose(stream: Duplex, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stream still open after ${ms} ms`)), ms);
    stream.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

/** A TCP listener that accepts and never says a word (no SSH banner). */
export async function silentListener(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
