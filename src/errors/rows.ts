// The shape of the classification table's rows (src/errors/table.ts): where a failure comes
// from, what identifies it, its kind, and one sentence for operators (docs/errors.md).
import type { ErrorKind } from './kind.js';

interface RowBase {
  readonly kind: ErrorKind;
  /** One sentence an operator reads in docs/errors.md. */
  readonly why: string;
}

/** A `remote_error` from libvirtd: its virErrorNumber, and the errno in int1 where it matters. */
export interface LibvirtRow extends RowBase {
  readonly source: 'libvirt';
  /** virErrorNumber, or '*' for a code no other row names. */
  readonly match: number | '*';
  /** The VIR_ERR_ name without its prefix (checked against VirErr by a test). */
  readonly name: string;
  /** errno carried in int1 (SYSTEM_ERROR); a row with it wins over the row without. */
  readonly int1?: number;
}

/**
 * A failed dial: `stage/reason`, the reason at any stage (stage `*`), or `stage`; the stages and reasons are
 * src/libvirt/transport/dial-error.ts's. `derived`: the kind of the dial's cause.
 */
export interface DialRow extends Omit<RowBase, 'kind'> {
  readonly source: 'dial';
  readonly match: string;
  readonly kind: ErrorKind | 'derived';
}

/** A Node.js (or undici) error `code` anywhere on the `cause` chain. */
export interface NodeRow extends RowBase {
  readonly source: 'node';
  readonly match: string;
}

/** An HTTP status from an image server: exact, or a range written `4xx`. */
export interface HttpRow extends RowBase {
  readonly source: 'http';
  readonly match: number | '3xx' | '4xx' | '5xx';
}

/** One of kvm2's own codes (`ERR_…`). `derived`: the thrower computes it (see its why). */
export interface Kvm2Row extends Omit<RowBase, 'kind'> {
  readonly source: 'kvm2';
  readonly match: string;
  readonly kind: ErrorKind | 'derived';
}

/** A JavaScript error recognised only by its `name`; `*` is the last resort. */
export interface JsRow extends RowBase {
  readonly source: 'js';
  readonly match: string;
}

export type ErrorTableRow = LibvirtRow | DialRow | NodeRow | HttpRow | Kvm2Row | JsRow;
export type ErrorSource = ErrorTableRow['source'];
