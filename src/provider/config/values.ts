// The configuration's values that are more than a type: durations (`30s`, `1.5h`, or ms), sizes
// (`512MiB`, `10GB`, or bytes) and listen addresses (`host:port`), each a parser and the zod
// schema that reports what was wrong.
import { isIPv4 } from 'node:net';
import { z } from 'zod';

// setTimeout fires at once for delays above 2^31-1 ms (Node docs, timers), so no duration may.
const MAX_TIMER_MS = 2 ** 31 - 1;
const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1e3,
  m: 60e3,
  h: 3600e3,
  d: 86400e3,
};
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)/;

/** `30s`, `5m`, `1h30m`, `250ms`, or a number of milliseconds. */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || value === '') return undefined;
  let rest = value.trim();
  let total = 0;
  while (rest !== '') {
    const m = DURATION.exec(rest);
    if (m === null) return undefined;
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? NaN);
    rest = rest.slice(m[0].length);
  }
  return total;
}

export const duration = z.unknown().transform((value, ctx): number => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration like '30s', '5m', '1h' or a number of milliseconds, got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  const rounded = Math.round(ms);
  if (rounded <= 0 || rounded > MAX_TIMER_MS) {
    ctx.addIssue({ code: 'custom', message: 'must be positive and at most 24 days (2^31-1 ms)' });
    return z.NEVER;
  }
  return rounded;
});

const SIZE_UNITS: Readonly<Record<string, number>> = {
  B: 1,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
  kB: 1e3,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
};

/** `10GiB`, `500MB`, or a number of bytes. */
export function parseSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)?\s*$/.exec(value);
  if (m === null) return undefined;
  // Own keys only: `10constructor` must not find Object's constructor and make NaN bytes.
  const name = m[2] ?? 'B';
  return Object.hasOwn(SIZE_UNITS, name) ? Number(m[1]) * (SIZE_UNITS[name] ?? NaN) : undefined;
}

export const size = z.unknown().transform((value, ctx): number => {
  const bytes = parseSize(value);
  if (bytes === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a size like '10GiB', '500MB' or a number of bytes, got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  const whole = Math.round(bytes);
  if (whole <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: bytes <= 0 ? 'must be positive' : 'must be at least one byte',
    });
    return z.NEVER;
  }
  return whole;
});

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** `host:port`, `[v6]:port`; undefined when it is neither. */
export function parseListen(value: string): ListenAddress | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  const hostPart = m?.[1] ?? m?.[2];
  if (hostPart === undefined || !(port >= 0 && port <= 65535)) return undefined;
  return { host: hostPart, port };
}

/**
 * Whether a listen host is loopback: `localhost`, `::1`, or an IPv4 address (plain or
 * IPv4-mapped) in 127.0.0.0/8. Only a well-formed address counts: `127.999.0.1` is no address,
 * and the server would hand it to the resolver.
 */
export function isLoopback(hostname: string): boolean {
  const v4 = /^::ffff:/i.test(hostname) ? hostname.slice(7) : hostname;
  return hostname === 'localhost' || hostname === '::1' || (isIPv4(v4) && v4.startsWith('127.'));
}

export const listen = z.string().transform((value, ctx): ListenAddress => {
  const address = parseListen(value);
  if (address === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected host:port (e.g. 127.0.0.1:3000, [::1]:3000, 0.0.0.0:3000), got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return address;
});

/** A DNS name, or a leading-dot suffix (`.example.com`) for every name under it; lowercased. */
export const hostName = z
  .string()
  .transform((value) => value.toLowerCase())
  .refine(
    (value) =>
      /^\.?(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(
        value,
      ),
    {
      message:
        'must be a host name (board.example.com) or a suffix starting with a dot (.example.com)',
    },
  );
