// The four outcomes the queue layer distinguishes (SPEC §3). Every error kvm2 raises carries
// one; callers branch on it, never on message text.
export type ErrorKind = 'transient' | 'permanent' | 'not_found' | 'quota_exceeded';

const KINDS: ReadonlySet<string> = new Set([
  'transient',
  'permanent',
  'not_found',
  'quota_exceeded',
]);

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && KINDS.has(value);
}

export interface Kinded {
  readonly code: string;
  readonly kind: ErrorKind;
}

/** Any error that says its code and kind: kvm2's own, and copies of them read back from Redis. */
export function isKinded(err: unknown): err is Error & Kinded {
  return (
    err instanceof Error &&
    typeof (err as Partial<Kinded>).code === 'string' &&
    isErrorKind((err as Partial<Kinded>).kind)
  );
}
