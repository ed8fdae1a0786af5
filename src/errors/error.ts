// The one base of every error kvm2 throws: a stable `code` with a row in the classification
// table, and the `kind` the queue layer acts on (SPEC §3). Callers branch on `code` or `kind`,
// never on class or message text; the classes below this one only add facts (a libvirt error's
// numbers, a dial's stage, a field's path). Messages name fields, hosts and volumes, never
// user-data.
import { kvm2ErrorKind } from './classify.js';
import type { ErrorKind } from './kind.js';
import type { DerivedKindCode, FixedKindCode, Kvm2ErrorCode } from './table.js';

export type { DerivedKindCode, FixedKindCode, Kvm2ErrorCode } from './table.js';

export interface Kvm2ErrorOptions {
  readonly cause?: unknown;
}

export class Kvm2Error extends Error {
  override name = 'Kvm2Error';
  readonly code: Kvm2ErrorCode;
  readonly kind: ErrorKind;

  /** A code whose row fixes the kind. */
  constructor(code: FixedKindCode, message: string, options?: Kvm2ErrorOptions);
  /** A code whose row says `derived`: the thrower knows the kind (from a status, a cause). */
  constructor(
    code: DerivedKindCode,
    message: string,
    options: Kvm2ErrorOptions & { readonly kind: ErrorKind },
  );
  constructor(
    code: Kvm2ErrorCode,
    message: string,
    options?: Kvm2ErrorOptions & { readonly kind?: ErrorKind },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.kind = options?.kind ?? kvm2ErrorKind(code) ?? 'transient';
  }
}
