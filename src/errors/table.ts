// The one classification table (SPEC §3): every failure kvm2 can meet, by where it comes from,
// to the kind the queue layer acts on. Data only, in four files by source; the lookups are in
// src/errors/classify.ts. docs/errors.md renders it, and a test keeps the two equal, so change
// both together.
import { KVM2_ROWS } from './kvm2-rows.js';
import { LIBVIRT_ROWS } from './libvirt-rows.js';
import { DIAL_ROWS, HTTP_ROWS, JS_ROWS, NODE_ROWS } from './other-rows.js';
import type { ErrorTableRow } from './rows.js';

export type {
  DialRow,
  ErrorSource,
  ErrorTableRow,
  HttpRow,
  JsRow,
  Kvm2Row,
  LibvirtRow,
  NodeRow,
} from './rows.js';

type Kvm2RowEntry = (typeof KVM2_ROWS)[number];
/** Every code kvm2 throws or reports. */
export type Kvm2ErrorCode = Kvm2RowEntry['match'];
/** The codes whose row fixes the kind. */
export type FixedKindCode = Extract<
  Kvm2RowEntry,
  { kind: Exclude<Kvm2RowEntry['kind'], 'derived'> }
>['match'];
/** The codes whose kind the thrower derives (from the cause, a status, libvirt's number). */
export type DerivedKindCode = Extract<Kvm2RowEntry, { kind: 'derived' }>['match'];

/** Frozen, rows too: the table is the contract, nothing may edit it at run time. */
export const ERROR_TABLE: readonly ErrorTableRow[] = Object.freeze(
  [...LIBVIRT_ROWS, ...DIAL_ROWS, ...NODE_ROWS, ...HTTP_ROWS, ...KVM2_ROWS, ...JS_ROWS].map((row) =>
    Object.freeze(row),
  ),
);
