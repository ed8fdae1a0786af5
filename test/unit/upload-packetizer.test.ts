// Upload data is cut into full 262,120-byte packets whatever chunk sizes the source yields.
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { PREFIX_SIZE, STREAM_CHUNK_MAX } from '../../src/libvirt/packet.js';
import { UploadPacketizer } from '../../src/libvirt/streams.js';

const header = { prog: 0x20008086, vers: 1, proc: 208, type: 3, serial: 7, status: 2 };

it('sends the same bytes in full packets, whatever the chunking', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 3 * STREAM_CHUNK_MAX }), { maxLength: 12 }),
      (sizes) => {
        let n = 0;
        const chunks = sizes.map((size) => {
          const b = Buffer.allocUnsafe(size);
          for (let i = 0; i < size; i++) b[i] = (n++ * 31) & 0xff;
          return b;
        });
        const frames: Buffer[] = [];
        const p = new UploadPacketizer(header, (fs) => frames.push(Buffer.concat(fs)));
        for (const c of chunks) p.push(c);
        p.flush();
        const payloads = frames.map((f) => {
          expect(f.readUInt32BE(0)).toBe(f.length);
          expect(f.readUInt32BE(20)).toBe(7); // serial
          expect(f.readInt32BE(24)).toBe(2); // CONTINUE
          return f.subarray(PREFIX_SIZE);
        });
        expect(Buffer.concat(payloads).equals(Buffer.concat(chunks))).toBe(true);
        payloads.slice(0, -1).forEach((pl) => expect(pl.length).toBe(STREAM_CHUNK_MAX));
        expect(payloads.every((pl) => pl.length > 0)).toBe(true);
      },
    ),
    { numRuns: 50 },
  );
});

it('copies every byte: a source may reuse its buffer, and written packet buffers are reused', () => {
  const source = Buffer.alloc(100_000);
  const sent: Buffer[] = [];
  const backing = new Set<ArrayBufferLike>();
  const p = new UploadPacketizer(header, (fs, written) => {
    for (const f of fs) {
      sent.push(Buffer.from(f)); // what the socket would have sent
      backing.add(f.buffer);
    }
    written();
  });
  const expected: Buffer[] = [];
  for (let round = 0; round < 40; round++) {
    source.fill(round); // the source's one buffer, overwritten for every chunk
    expected.push(Buffer.from(source));
    p.push(source);
  }
  p.flush();
  const payload = Buffer.concat(sent.map((f) => f.subarray(PREFIX_SIZE)));
  expect(payload.equals(Buffer.concat(expected))).toBe(true);
  expect(sent.length).toBe(Math.ceil((40 * 100_000) / STREAM_CHUNK_MAX));
  // Each frame written before the next was gathered: one packet buffer served them all.
  expect(backing.size).toBe(1);
});
