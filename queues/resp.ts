// kvm2's scripts as one RESP request each, sized first and then written into one buffer.
// ioredis encodes a command with a Buffer argument (BullMQ's packed options, in every
// completion) piece by piece: each string measured three times, the request's text built in
// pieces and then copied into a buffer. A completion's ~50 arguments, Command made and
// written, take ~14 µs that way against ~7.5 here, with 40% of the garbage (docs/benchmarks.md,
// #20, eleventh slices). The request is the same bytes (test/unit/resp.test.ts compares them
// with ioredis's; test/integration/lua-script.test.ts has Redis read them back).
import { Command } from 'ioredis';

/** Digits of a length, as RESP writes it in a header. */
function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : String(n).length;
}

/**
 * `name` and `args` (strings and Buffers, as ioredis holds them once a Command is made) as a
 * RESP array of bulk strings, written straight into one buffer (no text built first: the
 * strings a built text would take were most of a request's garbage). Undefined when a string
 * is not all ASCII: its characters would not be its bytes (the caller lets ioredis encode it).
 */
export function encodeRequest(
  name: string,
  args: readonly (string | Buffer)[],
): Buffer | undefined {
  const head = `*${args.length + 1}\r\n$${name.length}\r\n${name}\r\n`;
  let size = head.length;
  for (const arg of args) {
    if (typeof arg === 'string' && Buffer.byteLength(arg) !== arg.length) return undefined;
    size += 1 + digits(arg.length) + 2 + arg.length + 2;
  }
  const request = Buffer.allocUnsafe(size);
  let at = request.write(head, 0, 'latin1');
  for (const arg of args) {
    at += request.write(`$${arg.length}\r\n`, at, 'latin1');
    at += typeof arg === 'string' ? request.write(arg, at, 'latin1') : arg.copy(request, at);
    request[at++] = 13; // \r
    request[at++] = 10; // \n
  }
  return request;
}

/** A command that writes itself with encodeRequest, or as ioredis would when that declines. */
export class OnePassCommand extends Command {
  override toWritable(socket: object): string | Buffer {
    return encodeRequest(this.name, this.args as (string | Buffer)[]) ?? super.toWritable(socket);
  }
}
