// kvm2's scripts as one RESP request each, encoded in one pass. ioredis encodes a command with
// a Buffer argument (BullMQ's packed options, in every completion) piece by piece: each string
// measured three times and written into the request by its own call. A completion's ~50
// arguments cost ~15 µs that way against ~3.5 µs here (bench/queue's profile; docs/benchmarks.md,
// #20). The request is the same bytes (test/unit/resp.test.ts compares them with ioredis's).
import { Command } from 'ioredis';

/**
 * `name` and `args` (strings and Buffers, as ioredis holds them once a Command is made) as a
 * RESP array of bulk strings; undefined when a string is not all ASCII, whose lengths here
 * would be counted in characters and not bytes (the caller lets ioredis encode it).
 */
export function encodeRequest(
  name: string,
  args: readonly (string | Buffer)[],
): Buffer | undefined {
  // Text runs between the Buffer arguments: each length is its characters' count, the bytes'
  // count only while every character is ASCII (checked once a run is whole).
  const runs: (string | Buffer)[] = [];
  let text = `*${args.length + 1}\r\n$${name.length}\r\n${name}\r\n`;
  for (const arg of args) {
    if (typeof arg === 'string') {
      text += `$${arg.length}\r\n${arg}\r\n`;
    } else {
      runs.push(`${text}$${arg.length}\r\n`, arg);
      text = '\r\n';
    }
  }
  runs.push(text);
  let size = 0;
  for (const run of runs) {
    if (typeof run === 'string' && Buffer.byteLength(run) !== run.length) return undefined;
    size += run.length;
  }
  const request = Buffer.allocUnsafe(size);
  let at = 0;
  for (const run of runs) {
    if (typeof run === 'string') at += request.write(run, at, 'latin1');
    else at += run.copy(request, at);
  }
  return request;
}

/** A command that writes itself with encodeRequest, or as ioredis would when that declines. */
export class OnePassCommand extends Command {
  override toWritable(socket: object): string | Buffer {
    return encodeRequest(this.name, this.args as (string | Buffer)[]) ?? super.toWritable(socket);
  }
}
