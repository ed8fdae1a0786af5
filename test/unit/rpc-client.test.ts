// Engine rules that need a daemon to misbehave on cue, so a fake one on an in-memory pair:
// a queued call that is abandoned fails alone; an upload whose source throws closes the link
// (the daemon's stream would otherwise stay open); a download that gets more than it asked for
// fails and drops the link.
import { getEventListeners } from 'node:events';
import { Duplex } from 'node:stream';
import { expect, it } from 'vitest';
import type { LibvirtConnection } from '../../src/libvirt/connection.js';
import { subscribeLifecycle } from '../../src/libvirt/domain-events.js';
import {
  CallAbortedError,
  LibvirtError,
  LinkInterruptedError,
  ProtocolError,
} from '../../src/libvirt/errors.js';
import {
  FrameDecoder,
  PREFIX_SIZE,
  STREAM_CHUNK_MAX,
  encodePrefix,
  type PacketHeader,
} from '../../src/libvirt/packet.js';
import {
  ConnectGetHostname,
  DomainDefineXMLFlags,
  DomainEventCallbackLifecycle,
  KEEPALIVE_PROGRAM,
  REMOTE_PROGRAM,
  StorageVolDownload,
  StorageVolUpload,
  encodeRemoteError,
} from '../../src/libvirt/protocol.gen.js';
import { RpcClient } from '../../src/libvirt/rpc-client.js';
import { duplexPair } from '../fakes/duplex-pair.js';
import { bytesOf } from '../harness/protocol-fixtures.js';

/** Records the calls the client sends; answers them when told. */
function fakeDaemon(daemon: Duplex): {
  calls: PacketHeader[];
  reply(h: PacketHeader, payload: Buffer): void;
} {
  const calls: PacketHeader[] = [];
  const decoder = new FrameDecoder((h) => {
    if (h.type === 0) calls.push(h);
  });
  daemon.on('data', (d: Buffer) => decoder.push(d));
  return {
    calls,
    reply: (h, payload) =>
      daemon.write(
        Buffer.concat([encodePrefix({ ...h, type: 1, status: 0 }, payload.length), payload]),
      ),
  };
}

const hostname = (s: string): Buffer => {
  const b = Buffer.alloc(4 + Math.ceil(s.length / 4) * 4);
  b.writeUInt32BE(s.length, 0);
  b.write(s, 4);
  return b;
};

it('queued calls whose shared signal fires fail alone, through one listener; the link and the call on the wire go on', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake', maxInFlight: 1 });
  try {
    const first = client.call(ConnectGetHostname, undefined);
    const ac = new AbortController();
    const queued = [1, 2, 3].map(() =>
      client.call(ConnectGetHostname, undefined, { signal: ac.signal }),
    );
    await new Promise((r) => setImmediate(r));
    expect(daemon.calls).toHaveLength(1); // the queued ones never left the process
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    ac.abort();
    for (const call of queued) await expect(call).rejects.toBeInstanceOf(CallAbortedError);
    expect(client.isDown).toBe(false);
    daemon.reply(daemon.calls[0]!, hostname('h1'));
    await expect(first).resolves.toEqual({ hostname: 'h1' });
    expect(daemon.calls).toHaveLength(1);
  } finally {
    client.destroy();
  }
});

it('lets go of the signals of finished calls once it watches many, and of all when the link goes', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  const listeners = (c: AbortController): number => getEventListeners(c.signal, 'abort').length;
  try {
    const early = Array.from({ length: 64 }, () => new AbortController());
    for (const ac of early) {
      const call = client.call(ConnectGetHostname, undefined, { signal: ac.signal });
      await new Promise((r) => setImmediate(r));
      daemon.reply(daemon.calls.at(-1)!, hostname('h1'));
      await call;
    }
    // Finished, but few enough signals: their listeners may stay for the next call.
    expect(early.map(listeners)).toEqual(early.map(() => 1));
    const live = new AbortController();
    const pending = client.call(ConnectGetHostname, undefined, { signal: live.signal });
    expect(early.map(listeners)).toEqual(early.map(() => 0));
    expect(listeners(live)).toBe(1);
    client.destroy();
    await expect(pending).rejects.toThrow();
    expect(listeners(live)).toBe(0);
  } finally {
    client.destroy();
  }
});

/** An upload of `source` to a fake daemon that has answered its call: the stream is open. */
async function openUpload(source: AsyncIterable<Buffer>) {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  const vol = { pool: 'default', name: 'v', key: 'k' };
  const upload = client.upload(StorageVolUpload, { vol, offset: 0n, length: 0n, flags: 0 }, source);
  upload.catch(() => undefined); // awaited by the test
  await new Promise((r) => setImmediate(r));
  const call = daemon.calls[0]!;
  daemon.reply(call, Buffer.alloc(0)); // the call's reply: the stream is open
  return { client, theirs, call, upload };
}

it('an upload whose source throws closes the link and rejects with the source error', async () => {
  async function* failing(): AsyncGenerator<Buffer> {
    yield Buffer.alloc(1000);
    await new Promise((r) => setImmediate(r));
    throw new Error('image server went away');
  }
  const { client, upload } = await openUpload(failing());
  await expect(upload).rejects.toThrow('image server went away');
  expect(client.isDown).toBe(true);
});

it("an upload whose daemon fails the stream while the source waits rejects at once with the daemon's error", async () => {
  async function* stalling(): AsyncGenerator<Buffer> {
    yield Buffer.alloc(1000);
    // An image server that goes quiet: its body times out long after the pool is full.
    await new Promise((r) => setTimeout(r, 3_000));
    throw new Error('Body Timeout Error');
  }
  const { theirs, call, upload } = await openUpload(stalling());
  await new Promise((r) => setTimeout(r, 50));
  // The daemon's STREAM/ERROR: the pool's disk is full (VIR_ERR_SYSTEM_ERROR, ENOSPC).
  const refusal = bytesOf(encodeRemoteError, {
    code: 38,
    domain: 18,
    message: 'operation failed: unable to write: No space left on device',
    level: 2,
    dom: null,
    str1: null,
    str2: null,
    str3: null,
    int1: 28,
    int2: -1,
    net: null,
  });
  streamFrom(theirs, call)(1, refusal);
  const started = Date.now();
  const err = await upload.catch((e: unknown) => e);
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(err).toBeInstanceOf(LibvirtError);
  expect((err as LibvirtError).libvirtCode).toBe(38);
  expect((err as Error).message).toMatch(/No space left on device/);
});

/** The daemon's STREAM packets (type 3) of `call`'s stream: status 2 is CONTINUE. */
function streamFrom(theirs: Duplex, call: PacketHeader): (status: number, payload: Buffer) => void {
  return (status, payload) => {
    theirs.write(
      Buffer.concat([encodePrefix({ ...call, type: 3, status }, payload.length), payload]),
    );
  };
}

it('a download whose consumer lags pauses the link without keepalive taking it for dead', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  client.startKeepalive({ intervalMs: 50, count: 2 }); // silent for 100 ms: dead
  const vol = { pool: 'default', name: 'v', key: 'k' };
  const download = client.download(StorageVolDownload, { vol, offset: 0n, length: 0n, flags: 0 });
  const first = download.next(); // sends the call
  await new Promise((r) => setImmediate(r));
  const call = daemon.calls[0]!;
  daemon.reply(call, Buffer.alloc(0));
  const stream = streamFrom(theirs, call);
  const mib = Buffer.alloc(1 << 20, 7);
  for (let i = 0; i < 6; i++) stream(2, mib); // 6 MiB: past the 4 MiB high-water mark
  stream(2, Buffer.alloc(0)); // end of data
  await first;
  // The consumer lags well past the keepalive's patience; the link is paused, not dead.
  await new Promise((r) => setTimeout(r, 300));
  expect(client.isDown).toBe(false);
  let bytes = 1 << 20;
  const rest = (async () => {
    for (;;) {
      const { value, done } = await download.next();
      if (done) return;
      bytes += value.length;
    }
  })();
  // Our finish goes out after the data; the daemon confirms it.
  const finishSeen = new Promise<void>((resolve) => {
    const decoder = new FrameDecoder((h) => {
      if (h.type === 3 && h.status === 0) resolve();
    });
    theirs.on('data', (d: Buffer) => decoder.push(d));
  });
  await finishSeen;
  stream(0, Buffer.alloc(0));
  await rest;
  expect(bytes).toBe(6 << 20);
  expect(client.isDown).toBe(false);
  client.destroy();
});

it('a download that asked for a length fails with a protocol error, and the link is dropped, once the daemon sends more', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  const vol = { pool: 'default', name: 'v', key: 'k' };
  const download = client.download(StorageVolDownload, {
    vol,
    offset: 0n,
    length: 4096n,
    flags: 0,
  });
  const received: Buffer[] = [];
  const reading = (async () => {
    for await (const chunk of download) received.push(chunk);
  })();
  await new Promise((r) => setImmediate(r));
  const call = daemon.calls[0]!;
  daemon.reply(call, Buffer.alloc(0));
  const stream = streamFrom(theirs, call);
  // A broken daemon: the 4 KiB asked for, then 16 MiB more, then the end of data; it confirms
  // our finish, should one come.
  stream(2, Buffer.alloc(4096, 1));
  const mib = Buffer.alloc(1 << 20, 2);
  for (let i = 0; i < 16; i++) stream(2, mib);
  stream(2, Buffer.alloc(0));
  const decoder = new FrameDecoder((h) => {
    if (h.type === 3 && h.status === 0) stream(0, Buffer.alloc(0));
  });
  theirs.on('data', (d: Buffer) => decoder.push(d));
  await expect(reading).rejects.toMatchObject({ code: 'ERR_LIBVIRT_PROTOCOL' });
  await expect(reading).rejects.toBeInstanceOf(ProtocolError);
  expect(Buffer.concat(received).length).toBeLessThanOrEqual(4096);
  expect(client.isDown).toBe(true);
});

it('at most 4 calls on the wire, but up to 32 burst calls; calls leave in the order made', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
  try {
    const normal = Array.from({ length: 6 }, () => client.call(ConnectGetHostname, undefined));
    await settle();
    expect(daemon.calls).toHaveLength(4); // the daemon's window is 5: never reach it
    // Burst calls behind the queued normal ones wait for them: order is kept.
    const bursts = Array.from({ length: 40 }, () =>
      client.call(ConnectGetHostname, undefined, { burst: true }),
    );
    await settle();
    expect(daemon.calls).toHaveLength(4);
    for (const h of daemon.calls.splice(0, 4)) daemon.reply(h, hostname('h'));
    await settle();
    // The two normal calls left, then bursts up to 32 on the wire.
    expect(daemon.calls).toHaveLength(32);
    const serials = daemon.calls.map((h) => h.serial);
    expect(serials).toEqual([...serials].sort((a, b) => a - b));
    while (daemon.calls.length > 0) {
      for (const h of daemon.calls.splice(0)) daemon.reply(h, hostname('h'));
      await settle();
    }
    await expect(Promise.all([...normal, ...bursts])).resolves.toHaveLength(46);
  } finally {
    client.destroy();
  }
});

/**
 * A link that takes every write at once, copied as a kernel's socket buffer takes it, and
 * answers an upload like the daemon: the call's reply, then STREAM/OK for our finish. Fake
 * because a real socket takes a write whole, synchronously, only when it has room at that
 * instant; this one always does.
 */
class EagerLink extends Duplex {
  readonly received: Buffer[] = [];
  /** The backing memory of every write of a stream data packet (a STREAM frame with bytes). */
  readonly packetMemory = new Set<ArrayBufferLike>();
  /** `turns()` at each data packet received. */
  readonly turnsAtPacket: number[] = [];

  /** The most bytes the link held at once, taken by no write yet (its writableLength). */
  maxHeld = 0;

  /**
   * `deferWrites`: each write is taken on a later turn of the loop, as a socket whose buffer is
   * full takes it once the daemon has read; a sender that does not wait queues behind it.
   */
  constructor(
    private readonly turns: () => number,
    private readonly deferWrites = false,
  ) {
    super();
    // What the sender has queued, read after each of its writes.
    const write = this.write.bind(this) as (...args: unknown[]) => boolean;
    this.write = ((...args: unknown[]): boolean => {
      const ok = write(...args);
      this.maxHeld = Math.max(this.maxHeld, this.writableLength);
      return ok;
    }) as Duplex['write'];
  }

  readonly #decoder = new FrameDecoder((h, payload) => {
    if (h.type === 0) this.#answer({ ...h, type: 1, status: 0 });
    else if (h.type === 3 && h.status === 2) {
      this.received.push(payload);
      this.turnsAtPacket.push(this.turns());
    } else if (h.type === 3 && h.status === 0) this.#answer({ ...h, type: 3, status: 0 });
  });

  #answer(h: PacketHeader): void {
    setImmediate(() => this.push(encodePrefix(h, 0)));
  }

  override _read(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (chunk.length > 28 && chunk.readInt32BE(16) === 3) this.packetMemory.add(chunk.buffer);
    this.#decoder.push(Buffer.from(chunk)); // copied now: the caller may reuse `chunk` after cb
    if (this.deferWrites) setImmediate(cb);
    else cb();
  }
}

it('an upload into a link that takes each packet on a later turn queues at most two packets behind it', async () => {
  const link = new EagerLink(() => 0, true);
  const client = new RpcClient(link, { host: 'fake' });
  const chunk = Buffer.alloc(256 * 1024, 7);
  function* source(): Generator<Buffer> {
    for (let i = 0; i < 64; i++) yield chunk; // 16 MiB that never waits
  }
  const vol = { pool: 'default', name: 'v', key: 'k' };
  try {
    await client.upload(StorageVolUpload, { vol, offset: 0n, length: 0n, flags: 0 }, source());
    expect(Buffer.concat(link.received).length).toBe(64 * 256 * 1024);
    // One packet is the prefix and a full chunk of data (28 + 262,120 bytes); the upload waits
    // for the link to take what it holds once more than one is queued (with 1 MiB of slack it
    // held 1,048,668 bytes).
    const packet = PREFIX_SIZE + STREAM_CHUNK_MAX;
    expect(link.maxHeld).toBeGreaterThan(packet);
    expect(link.maxHeld).toBeLessThanOrEqual(2 * packet);
  } finally {
    client.destroy();
  }
});

it('an upload over a link that takes each write at once reuses one packet buffer and gives the event loop turns, from a source that never waits', async () => {
  let turns = 0;
  let ticking = true;
  const tick = (): void => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const link = new EagerLink(() => turns);
  const client = new RpcClient(link, { host: 'fake' });
  const chunk = Buffer.alloc(64 * 1024);
  let n = 0;
  function* source(): Generator<Buffer> {
    // 32 MiB in 64 KiB pieces, one buffer refilled for each: a synchronous source (an array, a
    // generator, readSync) gives the event loop no turn between them.
    for (let i = 0; i < 512; i++) {
      chunk.fill(n++ & 0xff);
      yield chunk;
    }
  }
  const vol = { pool: 'default', name: 'v', key: 'k' };
  try {
    await client.upload(StorageVolUpload, { vol, offset: 0n, length: 0n, flags: 0 }, source());
    const bytes = Buffer.concat(link.received);
    expect(bytes.length).toBe(512 * 64 * 1024);
    for (let i = 0; i < 512; i++) expect(bytes[i * 64 * 1024]).toBe(i & 0xff);
    // Each packet was taken before the next was gathered: its buffer served the next one.
    expect(link.packetMemory.size).toBe(1);
    // 32 MiB sent in one go would hold the loop throughout; it turned at least every 4 MiB.
    const during = link.turnsAtPacket.at(-1)! - link.turnsAtPacket[0]!;
    expect(during).toBeGreaterThanOrEqual(7);
  } finally {
    ticking = false;
    client.destroy();
  }
});

/** Every frame the client sends to `theirs`, headers only. */
function sentBy(theirs: Duplex): PacketHeader[] {
  const frames: PacketHeader[] = [];
  const decoder = new FrameDecoder((h) => frames.push(h));
  theirs.on('data', (d: Buffer) => decoder.push(d));
  return frames;
}

const isPing = (h: PacketHeader): boolean => h.prog === KEEPALIVE_PROGRAM && h.proc === 1;

/** Opens a download and answers its call; returns the daemon's stream writer. */
async function openDownload(
  client: RpcClient,
  theirs: Duplex,
  daemon: ReturnType<typeof fakeDaemon>,
): Promise<{
  download: AsyncGenerator<Buffer, void, undefined>;
  first: Promise<IteratorResult<Buffer, void>>;
  call: PacketHeader;
  stream: (status: number, payload: Buffer) => void;
}> {
  const vol = { pool: 'default', name: 'v', key: 'k' };
  const download = client.download(StorageVolDownload, { vol, offset: 0n, length: 0n, flags: 0 });
  const first = download.next(); // sends the call
  await new Promise((r) => setImmediate(r));
  const call = daemon.calls[0]!;
  daemon.reply(call, Buffer.alloc(0));
  return { download, first, call, stream: streamFrom(theirs, call) };
}

it('while a lagging download holds the link, the client still pings each interval, so the daemon hears it', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const sent = sentBy(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  client.startKeepalive({ intervalMs: 50, count: 2 });
  try {
    const { first, stream } = await openDownload(client, theirs, daemon);
    const mib = Buffer.alloc(1 << 20, 7);
    for (let i = 0; i < 6; i++) stream(2, mib); // past the 4 MiB high-water mark: paused
    await first;
    const before = sent.filter(isPing).length;
    await new Promise((r) => setTimeout(r, 400));
    // libvirtd closes a client it hears nothing from for 30 s: we keep talking while we do not
    // read, and our own silence verdict waits until we read again.
    expect(sent.filter(isPing).length - before).toBeGreaterThanOrEqual(3);
    expect(client.isDown).toBe(false);
  } finally {
    client.destroy();
  }
});

it('a download whose consumer stops before the end drops the link: the daemon would keep its stream open and sending', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  const { download, first, stream } = await openDownload(client, theirs, daemon);
  stream(2, Buffer.alloc(1000));
  await first;
  await download.return(); // what `break` in a for-await does
  expect(client.isDown).toBe(true);
});

it('a hole on a download that asked for none fails it with a protocol error and drops the link', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  const { download, first, call } = await openDownload(client, theirs, daemon);
  theirs.write(encodePrefix({ ...call, type: 6, status: 2 }, 0)); // STREAM_HOLE
  await expect(first).rejects.toBeInstanceOf(ProtocolError);
  await expect(download.next()).resolves.toMatchObject({ done: true });
  expect(client.isDown).toBe(true);
});

it('data from the daemon on an upload fails it with a protocol error and drops the link', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  async function* slow(): AsyncGenerator<Buffer> {
    for (;;) {
      yield Buffer.alloc(1000);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  const vol = { pool: 'default', name: 'v', key: 'k' };
  const upload = client.upload(StorageVolUpload, { vol, offset: 0n, length: 0n, flags: 0 }, slow());
  await new Promise((r) => setImmediate(r));
  const call = daemon.calls[0]!;
  daemon.reply(call, Buffer.alloc(0));
  streamFrom(theirs, call)(2, Buffer.alloc(100));
  await expect(upload).rejects.toBeInstanceOf(ProtocolError);
  expect(client.isDown).toBe(true);
});

/** A link whose peer sends what it is given and never reads: no write is ever taken. */
class DeafLink extends Duplex {
  override _read(): void {}
  override _write(): void {} // never calls back: every write stays queued
}

it('a peer that floods pings and never reads gets one pong queued, not one per ping', async () => {
  const link = new DeafLink();
  const client = new RpcClient(link, { host: 'fake' });
  try {
    const ping = encodePrefix(
      { prog: KEEPALIVE_PROGRAM, vers: 1, proc: 1, type: 2, serial: 0, status: 0 },
      0,
    );
    for (let i = 0; i < 100; i++) link.push(Buffer.concat(Array<Buffer>(100).fill(ping)));
    await new Promise((r) => setImmediate(r));
    expect(link.writableLength).toBe(PREFIX_SIZE); // one PONG: 28 bytes
  } finally {
    client.destroy();
  }
});

it('a link holding more than 32 MiB of our writes is dropped: its peer stopped reading', async () => {
  const link = new DeafLink();
  const client = new RpcClient(link, { host: 'fake', maxInFlight: 12 });
  const xml = 'x'.repeat(3_000_000);
  const calls = Array.from({ length: 12 }, () =>
    client.call(DomainDefineXMLFlags, { xml, flags: 0 }),
  );
  for (const call of calls) await expect(call).rejects.toBeInstanceOf(LinkInterruptedError);
  expect(client.isDown).toBe(true);
});

it('a stream whose signal fired before it began leaves alone the stream opened after it in the same tick', async () => {
  const link = new EagerLink(() => 0);
  const client = new RpcClient(link, { host: 'fake', streamStallMs: 1000 });
  const vol = { pool: 'default', name: 'v', key: 'k' };
  const args = { vol, offset: 0n, length: 0n, flags: 0 };
  try {
    const ac = new AbortController();
    ac.abort();
    const abandoned = client.upload(StorageVolUpload, args, [Buffer.alloc(10)], {
      signal: ac.signal,
    });
    const next = client.upload(StorageVolUpload, args, [Buffer.alloc(10)]);
    await expect(abandoned).rejects.toBeInstanceOf(CallAbortedError);
    await expect(next).resolves.toBeUndefined();
    expect(client.isDown).toBe(false);
  } finally {
    client.destroy();
  }
});

/** A lifecycle event (remote_domain_event_callback_lifecycle_msg) for `callbackID`. */
function lifecycleEvent(callbackID: number): Buffer {
  const body = Buffer.alloc(4 + 4 + 4 + 16 + 4 + 4 + 4);
  body.writeInt32BE(callbackID, 0);
  body.writeUInt32BE(1, 4); // dom.name: "d", padded to 4
  body.write('d', 8);
  // dom.uuid: 16 zero bytes; dom.id, event (STARTED), detail
  body.writeInt32BE(1, 28);
  body.writeInt32BE(2, 32);
  body.writeInt32BE(0, 36);
  const h = { prog: REMOTE_PROGRAM, vers: 1, proc: DomainEventCallbackLifecycle.proc };
  return Buffer.concat([encodePrefix({ ...h, type: 2, serial: 0, status: 0 }, body.length), body]);
}

it('events held before the registration reply are capped: past 1,000 the link is dropped', async () => {
  const [ours, theirs] = duplexPair();
  const daemon = fakeDaemon(theirs);
  const client = new RpcClient(ours, { host: 'fake' });
  const heard: unknown[] = [];
  // The engine offers what domain-events needs of a connection.
  const conn = client as unknown as LibvirtConnection;
  const subscribing = subscribeLifecycle(conn, (e) => heard.push(e));
  await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 1001; i++) theirs.write(lifecycleEvent(7));
  const id = Buffer.alloc(4);
  id.writeInt32BE(7);
  daemon.reply(daemon.calls[0]!, id);
  await expect(subscribing).rejects.toThrow();
  expect(client.isDown).toBe(true);
  expect(heard).toEqual([]);
});
