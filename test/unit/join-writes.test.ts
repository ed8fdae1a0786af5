// The SSH channel's _writev (src/libvirt/transport/ssh.ts): frames written while corked leave as
// one chunk (one SSH packet), large ones one by one, always in order. A plain Writable stands in
// for ssh2's channel: both hand buffered chunks to _writev when it exists.
import { Writable } from 'node:stream';
import type { ClientChannel } from 'ssh2';
import { describe, expect, it } from 'vitest';
import { joinWrites } from '../../src/libvirt/transport/ssh-link.js';

function channel(): { stream: Writable; writes: Buffer[] } {
  const writes: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      writes.push(chunk);
      setImmediate(callback);
    },
  });
  joinWrites(stream as unknown as ClientChannel);
  return { stream, writes };
}

async function flushed(stream: Writable): Promise<void> {
  await new Promise<void>((resolve) => stream.end(resolve));
}

describe('joinWrites', () => {
  it('sends the small frames of one corked tick as one write, in order', async () => {
    const { stream, writes } = channel();
    stream.cork();
    for (const text of ['one', 'two', 'three']) stream.write(Buffer.from(text));
    process.nextTick(() => stream.uncork());
    await flushed(stream);
    expect(writes.map(String)).toEqual(['onetwothree']);
  });

  it('writes large chunks one by one, in order, without copying them together', async () => {
    const { stream, writes } = channel();
    const big = [Buffer.alloc(40_000, 1), Buffer.alloc(40_000, 2), Buffer.from('tail')];
    stream.cork();
    for (const b of big) stream.write(b);
    process.nextTick(() => stream.uncork());
    await flushed(stream);
    expect(writes).toHaveLength(3);
    expect(writes[0]).toBe(big[0]);
    expect(writes[1]).toBe(big[1]);
    expect(String(writes[2])).toBe('tail');
  });

  it('passes a write error to the writer', async () => {
    const stream = new Writable({
      write(_chunk, _encoding, callback) {
        callback(new Error('channel closed'));
      },
    });
    joinWrites(stream as unknown as ClientChannel);
    const failed = new Promise<Error>((resolve) => stream.on('error', resolve));
    stream.cork();
    stream.write(Buffer.from('a'));
    stream.write(Buffer.from('b'));
    stream.uncork();
    expect((await failed).message).toBe('channel closed');
  });
});
