// Decoder robustness: whatever bytes arrive, in whatever chunks, the decoder yields the frames
// that are there or rejects with a ProtocolError; the engine never crashes or hangs.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../src/libvirt/errors.js';
import {
  FrameDecoder,
  PREFIX_SIZE,
  encodePrefix,
  type PacketHeader,
} from '../../src/libvirt/packet.js';
import { ConnectGetHostname, DomainLookupByName } from '../../src/libvirt/protocol.gen.js';
import { RpcClient } from '../../src/libvirt/rpc-client.js';
import { duplexPair } from '../fakes/duplex-pair.js';

function frame(h: Partial<PacketHeader>, payload: Buffer): Buffer {
  const header: PacketHeader = {
    prog: 0x20008086,
    vers: 1,
    proc: 59,
    type: 1,
    serial: 1,
    status: 0,
    ...h,
  };
  return Buffer.concat([encodePrefix(header, payload.length), payload]);
}

function splitAt(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  out.push(buf.subarray(prev));
  return out;
}

describe('FrameDecoder', () => {
  it('yields the same frames however the stream is cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (payloads, cuts) => {
          const frames = payloads.map((p, i) => frame({ serial: i + 1 }, Buffer.from(p)));
          const got: Array<[number, string]> = [];
          const d = new FrameDecoder((h, p) => got.push([h.serial, p.toString('hex')]));
          for (const chunk of splitAt(Buffer.concat(frames), cuts)) d.push(chunk);
          expect(got).toEqual(payloads.map((p, i) => [i + 1, Buffer.from(p).toString('hex')]));
          expect(d.pendingBytes).toBe(0);
        },
      ),
    );
  });

  it('rejects a length word shorter than the header', () => {
    const d = new FrameDecoder(() => undefined);
    const bad = Buffer.alloc(PREFIX_SIZE);
    bad.writeUInt32BE(27, 0);
    expect(() => d.push(bad)).toThrow(ProtocolError);
    expect(() => new FrameDecoder(() => undefined).push(bad)).toThrow(
      /shorter than the 28-byte header/,
    );
  });

  it('rejects an oversized frame before buffering it', () => {
    const d = new FrameDecoder(() => undefined);
    const bad = Buffer.alloc(8);
    bad.writeUInt32BE(4 + 33554432 + 1, 0);
    expect(() => d.push(bad)).toThrow(/exceeds libvirt's maximum/);
  });

  it('waits for the rest of a truncated frame and emits nothing', () => {
    const got: number[] = [];
    const d = new FrameDecoder((h) => got.push(h.serial));
    const f = frame({}, Buffer.alloc(100));
    d.push(f.subarray(0, 70));
    expect(got).toEqual([]);
    expect(d.pendingBytes).toBe(70);
    d.push(f.subarray(70));
    expect(got).toEqual([1]);
  });

  it('a large frame trickled a byte at a time holds its length in memory, not a Buffer per byte', () => {
    // A hostile or broken daemon announces a 32 MiB frame and sends it a byte per write: the
    // pieces were kept until the frame was whole, ~120 bytes of heap each (gigabytes in all).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const got: number[] = [];
    const d = new FrameDecoder((h) => got.push(h.serial));
    const f = frame({ serial: 7 }, Buffer.alloc(2 * 1024 * 1024 - PREFIX_SIZE, 1));
    d.push(f.subarray(0, 4));
    gc();
    const before = process.memoryUsage().heapUsed;
    const trickled = 1_000_000;
    for (let i = 4; i < 4 + trickled; i += 1) d.push(Buffer.from(f.subarray(i, i + 1)));
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    expect(d.pendingBytes).toBe(4 + trickled);
    // The pieces as kept before: ~120 MB for a million bytes; now the frame's own buffer.
    expect(grown).toBeLessThan(20 * 1024 * 1024);
    d.push(f.subarray(4 + trickled));
    expect(got).toEqual([7]);
    expect(d.pendingBytes).toBe(0);
  }, 60_000);

  it('on random garbage either decodes frames or throws ProtocolError, nothing else', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 2000 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (bytes, cuts) => {
          const d = new FrameDecoder(() => undefined);
          try {
            for (const chunk of splitAt(Buffer.from(bytes), cuts)) d.push(chunk);
          } catch (err) {
            expect(err).toBeInstanceOf(ProtocolError);
          }
        },
      ),
    );
  });
});

describe('RpcClient fed bytes no daemon would send', () => {
  async function withClient(
    test: (client: RpcClient, daemon: import('node:stream').Duplex) => Promise<void>,
  ): Promise<void> {
    const [ours, daemon] = duplexPair();
    const client = new RpcClient(ours, { host: 'fake', callTimeoutMs: 2000 });
    try {
      await test(client, daemon);
    } finally {
      client.destroy();
    }
  }

  it('fails every waiting call with a clear error on a garbage frame, and stays down', async () => {
    await withClient(async (client, daemon) => {
      const a = client.call(ConnectGetHostname, undefined);
      const b = client.call(DomainLookupByName, { name: 'x' });
      daemon.write(Buffer.from('this is not libvirt at all, not even close'));
      await expect(a).rejects.toThrow(/frame length .* exceeds|shorter than/);
      await expect(b).rejects.toMatchObject({ kind: 'transient' });
      expect(client.isDown).toBe(true);
      await expect(client.call(ConnectGetHostname, undefined)).rejects.toThrow(/link is down/);
    });
  });

  it('rejects a reply whose payload is truncated with a ProtocolError naming the procedure', async () => {
    await withClient(async (client, daemon) => {
      const a = client.call(ConnectGetHostname, undefined);
      // A string length of 100 with only 4 bytes behind it.
      daemon.write(frame({ proc: 59, serial: 1 }, Buffer.from('0000006461626364', 'hex')));
      await expect(a).rejects.toBeInstanceOf(ProtocolError);
      await expect(a).rejects.toThrow(/ConnectGetHostname reply: truncated XDR/);
      // A bad payload does not desynchronise the framing: the link still serves.
      const b = client.call(ConnectGetHostname, undefined);
      daemon.write(frame({ proc: 59, serial: 2 }, Buffer.from('0000000268690000', 'hex')));
      await expect(b).resolves.toEqual({ hostname: 'hi' });
    });
  });

  it('rejects trailing bytes after a reply (an encoder bug libvirt would not notice)', async () => {
    await withClient(async (client, daemon) => {
      const a = client.call(ConnectGetHostname, undefined);
      daemon.write(frame({ proc: 59, serial: 1 }, Buffer.from('000000026869000000000000', 'hex')));
      await expect(a).rejects.toThrow(/unexpected bytes/);
    });
  });

  it('ignores a reply for a serial nobody waits for', async () => {
    await withClient(async (client, daemon) => {
      const a = client.call(ConnectGetHostname, undefined);
      daemon.write(frame({ proc: 59, serial: 999 }, Buffer.from('0000000178000000', 'hex')));
      daemon.write(frame({ proc: 59, serial: 1 }, Buffer.from('0000000179000000', 'hex')));
      await expect(a).resolves.toEqual({ hostname: 'y' });
    });
  });

  it('survives random frames with valid framing and random payloads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            serial: fc.integer({ min: 0, max: 6 }),
            type: fc.integer({ min: 0, max: 7 }),
            status: fc.integer({ min: -1, max: 3 }),
            proc: fc.constantFrom(59, 23, 1, 7),
            payload: fc.uint8Array({ maxLength: 64 }),
          }),
          { maxLength: 12 },
        ),
        async (frames) => {
          await withClient(async (client, daemon) => {
            const calls = [1, 2, 3].map(() =>
              client.call(ConnectGetHostname, undefined, { timeoutMs: 40 }).then(
                () => 'ok',
                (e: Error) => (e as { code?: string }).code ?? e.name,
              ),
            );
            for (const f of frames) daemon.write(frame(f, Buffer.from(f.payload)));
            const outcomes = await Promise.all(calls);
            for (const o of outcomes) {
              expect([
                'ok',
                'ERR_LIBVIRT',
                'ERR_LIBVIRT_PROTOCOL',
                'ERR_LIBVIRT_CALL_TIMEOUT',
                'ERR_LIBVIRT_INTERRUPTED',
              ]).toContain(o);
            }
          });
        },
      ),
      { numRuns: 60 },
    );
  });
});
