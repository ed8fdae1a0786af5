// kvm2's scripts as one RESP request each, sized first and then written into one buffer.
// ioredis encodes a command with a Buffer argument (BullMQ's packed options, in every
// completion) piece by piece: each string measured three times, the request's text built in
// pieces and then copied into a buffer. A completion's ~50 arguments, Command made and
// written, take ~15 µs that way, ~8 with this file's first version and ~4.5 now
// (docs/benchmarks.md, #20, eleventh and twelfth slices). The request is the same bytes
// (test/unit/resp.test.ts compares them with ioredis's; test/integration/lua-script.test.ts
// has Redis read them back).
import { Command } from 'ioredis';

/** Digits of a length, as RESP writes it in a header. */
function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : String(n).length;
}

/** Strings up to this long are copied a character at a time; longer ones by Buffer#write. */
const SHORT = 32;

/** `mark` (`*` or `$`), `n` in decimal and CRLF at `at`; returns the offset after them. */
function header(request: Buffer, at: number, mark: number, n: number): number {
  request[at++] = mark;
  const end = at + digits(n);
  for (let i = end - 1; i >= at; i--) {
    request[i] = 48 + (n % 10);
    n = Math.floor(n / 10);
  }
  request[end] = 13; // \r
  request[end + 1] = 10; // \n
  return end + 2;
}

/**
 * `name` and `args` (strings and Buffers, as ioredis holds them once a Command is made) as a
 * RESP array of bulk strings, written straight into one buffer: no text built first, and no
 * call into C++ for a header or a short string (a completion's ~50 arguments are mostly keys
 * and numbers; each Buffer#write of one cost more than copying its characters). Undefined when
 * a string is not all ASCII: its characters would not be its bytes (the caller lets ioredis
 * encode it).
 */
export function encodeRequest(
  name: string,
  args: readonly (string | Buffer)[],
): Buffer | undefined {
  let size = 1 + digits(args.length + 1) + 2 + 1 + digits(name.length) + 2 + name.length + 2;
  for (const arg of args) size += 1 + digits(arg.length) + 2 + arg.length + 2;
  const request = Buffer.allocUnsafe(size);
  let at = header(request, 0, 42, args.length + 1); // *
  at = header(request, at, 36, name.length); // $
  at += request.write(name, at, 'latin1');
  request[at++] = 13;
  request[at++] = 10;
  for (const arg of args) {
    const n = arg.length;
    at = header(request, at, 36, n);
    if (typeof arg !== 'string') {
      at += arg.copy(request, at);
    } else if (n <= SHORT) {
      for (let i = 0; i < n; i++) {
        const c = arg.charCodeAt(i);
        if (c > 127) return undefined;
        request[at++] = c;
      }
    } else {
      if (Buffer.byteLength(arg) !== n) return undefined;
      at += request.write(arg, at, 'latin1');
    }
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
