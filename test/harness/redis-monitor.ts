// MONITOR on a socket of its own, read line by line. ioredis's monitor() shares its command
// queue's state machine with the lines it streams, and under other test files' traffic on the
// same Redis it failed a run ("Command queue state error", a line arriving as the reply to no
// command); the test then failed on its harness, not on what it checked.
import net from 'node:net';
import { REDIS_URL } from './redis.js';

export interface MonitoredCommand {
  /** The command's words, unquoted (`EVALSHA`, its sha, its keys and arguments). */
  readonly args: string[];
  /** What MONITOR names as its source: `127.0.0.1:PORT`, or `lua` inside a script. */
  readonly source: string;
}

export interface RedisMonitor {
  stop(): void;
}

const LINE = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/;
const WORD = /"((?:[^"\\]|\\.)*)"/g;

function unquote(word: string): string {
  return word.replace(/\\(x[0-9a-f]{2}|.)/g, (_m, e: string) =>
    e.length === 3 ? String.fromCharCode(parseInt(e.slice(1), 16)) : e,
  );
}

/** Starts MONITOR; resolves once Redis has confirmed it, so later commands are all seen. */
export async function monitorRedis(
  onCommand: (command: MonitoredCommand) => void,
  url = REDIS_URL,
): Promise<RedisMonitor> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port || 6379), hostname);
  socket.setEncoding('utf8');
  let pending = '';
  let confirmed: (() => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    confirmed = resolve;
    socket.once('error', reject);
  });
  socket.on('data', (chunk: string) => {
    pending += chunk;
    let end: number;
    while ((end = pending.indexOf('\r\n')) >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (line === '+OK') confirmed?.();
      const m = LINE.exec(line);
      if (m === null) continue;
      const args = [...(m[2] ?? '').matchAll(WORD)].map((w) => unquote(w[1] ?? ''));
      onCommand({ args, source: m[1] ?? '' });
    }
  });
  socket.write('MONITOR\r\n');
  await ready;
  return { stop: () => socket.destroy() };
}
