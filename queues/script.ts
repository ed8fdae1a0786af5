// kvm2's Lua scripts: files in queues/lua/, loaded once per process, run by SHA1 (EVALSHA). A
// script's text crosses the wire only the first time after a Redis restart or SCRIPT FLUSH
// (NOSCRIPT → EVAL, which also caches it again); every kvm2 script runs on a job's hot path,
// where bytes on a loopback socket cost CPU.
//
// A line `--- @include "includes/name"` is replaced by queues/lua/includes/name.lua, which
// defines local functions the script calls (BullMQ's scripts share their parts the same way).
// Each part is included once, however many times it is named.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisConnection } from './redis.js';
import { OnePassCommand } from './resp.js';

/** Where the .lua files are: beside this module (the build copies them into its output). */
const LUA_DIR = new URL('./lua/', import.meta.url);
const INCLUDE = /^--- @include "([a-z0-9/-]+)"$/gm;

export class LuaScript {
  readonly sha: string;

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** The script `queues/lua/<name>.lua`, its includes in place. */
  static load(name: string): LuaScript {
    return new LuaScript(expand(name, new Set([name]), []));
  }

  async run(
    redis: RedisConnection,
    keys: readonly string[],
    args: readonly (string | number | Buffer)[],
  ): Promise<unknown> {
    // One array, which ioredis flattens into the command: a script's dozens of arguments are
    // not spread into a call's parameters (bench/queue's profile: 2 µs a call).
    return this.runFlat(redis, keys.length, [...keys, ...args]);
  }

  /** `run` with the keys and arguments in one array, the first `numKeys` of it the keys. */
  async runFlat(
    redis: RedisConnection,
    numKeys: number,
    keysThenArgs: readonly (string | number | Buffer)[],
  ): Promise<unknown> {
    const rest = keysThenArgs as string[];
    try {
      // As redis.evalsha(…) makes it, replies as strings (kvm2's connections set no ioredis
      // keyPrefix, which BullMQ refuses), and written in one pass (resp.ts).
      const command = new OnePassCommand('evalsha', [this.sha, numKeys, rest], {
        replyEncoding: 'utf8',
      });
      return await redis.sendCommand(command);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) {
        throw withoutArguments(err);
      }
      return redis.eval(this.lua, numKeys, rest).catch((e: unknown) => {
        throw withoutArguments(e);
      });
    }
  }
}

/**
 * `err` without the arguments ioredis hangs on the error of a command Redis refused
 * (`command.args`): a script's arguments carry request data, a create's user-data among them,
 * which an application that logs the error would write out. The command's name stays.
 */
function withoutArguments(err: unknown): unknown {
  const command = (err as { command?: { name?: unknown } } | null)?.command;
  if (command !== undefined) (err as { command: unknown }).command = { name: command.name };
  return err;
}

function read(name: string, from: string | undefined): string {
  try {
    return readFileSync(new URL(`${name}.lua`, LUA_DIR), 'utf8');
  } catch (err) {
    const where = from === undefined ? '' : ` (included by ${from}.lua)`;
    throw new Error(`Lua script ${name}.lua cannot be read${where}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** `name`'s text with every include expanded; `seen` keeps each part to its first place. */
function expand(name: string, seen: Set<string>, chain: readonly string[]): string {
  const text = read(name, chain.at(-1));
  return text.replace(INCLUDE, (_line, part: string) => {
    if ([...chain, name].includes(part)) {
      throw new Error(`Lua script ${name}.lua includes ${part}.lua, which includes it back`);
    }
    if (seen.has(part)) return '';
    seen.add(part);
    return expand(part, seen, [...chain, name]).trimEnd();
  });
}
