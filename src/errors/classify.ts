// classifyError: any thrown value to the kind the queue layer acts on (SPEC §3), by the one
// table in src/errors/table.ts. Errors are recognised by their stable `code` (STYLE 4), not by
// class, so this module needs nothing from the layers that throw them.
import { isErrorKind, type ErrorKind } from './kind.js';
import { ERROR_TABLE, type ErrorTableRow, type LibvirtRow } from './table.js';

type Row<S extends ErrorTableRow['source']> = Extract<ErrorTableRow, { source: S }>;

function rowsOf<S extends ErrorTableRow['source']>(source: S): readonly Row<S>[] {
  return ERROR_TABLE.filter((r): r is Row<S> => r.source === source);
}

const libvirtRows = rowsOf('libvirt');
const dialRows = rowsOf('dial');
const nodeRows = rowsOf('node');
const httpRows = rowsOf('http');
// By code: every kvm2 error looks its kind up when it is made.
const kvm2Kinds: ReadonlyMap<string, ErrorKind | 'derived'> = new Map(
  rowsOf('kvm2').map((r) => [r.match, r.kind]),
);
const jsRows = rowsOf('js');
const lastResort: ErrorKind = jsRows.find((r) => r.match === '*')?.kind ?? 'transient';

/** The row for a libvirt error: the code with its int1 first, then the code alone, then '*'. */
function libvirtErrorRow(code: number, int1?: number): LibvirtRow | undefined {
  return (
    libvirtRows.find((r) => r.match === code && r.int1 !== undefined && r.int1 === int1) ??
    libvirtRows.find((r) => r.match === code && r.int1 === undefined) ??
    libvirtRows.find((r) => r.match === '*')
  );
}

/**
 * Kind of a libvirt error, from the libvirt rows of src/errors/table.ts. `int1` is the errno
 * libvirt sends with SYSTEM_ERROR (28 ENOSPC is quota_exceeded). A code no row names is
 * permanent: the daemon gave a definite answer, and the same call would get it again.
 */
export function libvirtErrorKind(code: number, int1?: number): ErrorKind {
  return libvirtErrorRow(code, int1)?.kind ?? 'permanent';
}

/**
 * A dial failure's kind: `stage/reason`, then the reason at any stage, then the stage. A row
 * that says `derived` gives the kind of the dial's cause (transient when there is none).
 */
export function dialErrorKind(stage: string, reason?: string, cause?: unknown): ErrorKind {
  const byReason =
    reason === undefined
      ? undefined
      : (dialRows.find((r) => r.match === `${stage}/${reason}`) ??
        dialRows.find((r) => r.match === `*/${reason}`));
  const kind = (byReason ?? dialRows.find((r) => r.match === stage))?.kind ?? 'transient';
  return kind === 'derived' ? classifyError(cause) : kind;
}

/** A Node.js or undici error code's kind, when the table names it. */
export function nodeErrorKind(code: string): ErrorKind | undefined {
  return nodeRows.find((r) => r.match === code)?.kind;
}

/** An HTTP status's kind: the exact status first, then its range (`4xx`). */
export function httpStatusKind(status: number): ErrorKind | undefined {
  const range = `${Math.floor(status / 100)}xx`;
  return (httpRows.find((r) => r.match === status) ?? httpRows.find((r) => r.match === range))
    ?.kind;
}

/** One of kvm2's own `ERR_…` codes' kind; undefined for a `derived` row or an unknown code. */
export function kvm2ErrorKind(code: string): ErrorKind | undefined {
  const kind = kvm2Kinds.get(code);
  return kind === 'derived' ? undefined : kind;
}

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null;
}

/** The kind one error says about itself, without looking at its causes. */
function ownKind(e: Fields): ErrorKind | undefined {
  // The libvirt and dial kinds are the table's, recomputed from the facts the error carries so
  // a copied or revived one agrees too.
  if (e.code === 'ERR_LIBVIRT' && typeof e.libvirtCode === 'number') {
    return libvirtErrorKind(e.libvirtCode, typeof e.int1 === 'number' ? e.int1 : undefined);
  }
  if (e.code === 'ERR_LIBVIRT_DIAL' && typeof e.stage === 'string') {
    return dialErrorKind(e.stage, typeof e.reason === 'string' ? e.reason : undefined, e.cause);
  }
  // kvm2's own errors carry their row's kind, or the one their thrower derived.
  if (isErrorKind(e.kind)) return e.kind;
  if (typeof e.name === 'string') {
    const row = jsRows.find((r) => r.match === e.name && r.match !== '*');
    if (row !== undefined) return row.kind;
  }
  if (typeof e.code === 'string') {
    const kind = kvm2ErrorKind(e.code) ?? nodeErrorKind(e.code);
    if (kind !== undefined) return kind;
  }
  const status = typeof e.status === 'number' ? e.status : e.statusCode;
  if (typeof status === 'number' && Number.isInteger(status) && status >= 100 && status <= 599) {
    return httpStatusKind(status);
  }
  return undefined;
}

// Bounded: cause chains are short, and a cycle (a.cause = b, b.cause = a) must not hang.
const MAX_ERRORS_VISITED = 16;

/**
 * The kind of anything thrown. The outermost error that says something decides: its own
 * `kind`, else its code, status or name by the table; else the walk goes on through `cause`
 * (and AggregateError's `errors`), so `TypeError('fetch failed', { cause: ECONNRESET })` is
 * transient. Nothing recognised: the table's last-resort row, transient (attempts are bounded
 * and every step is idempotent; failing a blip at once would lose the create).
 */
export function classifyError(err: unknown): ErrorKind {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < MAX_ERRORS_VISITED) {
    const e = queue.shift();
    if (!isObject(e) || seen.has(e)) continue;
    seen.add(e);
    const kind = ownKind(e);
    if (kind !== undefined) return kind;
    if (e.cause !== undefined) queue.push(e.cause);
    if (Array.isArray(e.errors)) queue.push(...(e.errors as unknown[]));
  }
  return lastResort;
}
