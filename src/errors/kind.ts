// The four outcomes the queue layer distinguishes (SPEC §3). Every error kvm2 raises carries
// one; callers branch on it, never on message text.
export type ErrorKind = 'transient' | 'permanent' | 'not_found' | 'quota_exceeded';

export interface Kinded {
  readonly code: string;
  readonly kind: ErrorKind;
}

export function isKinded(err: unknown): err is Error & Kinded {
  return (
    err instanceof Error &&
    typeof (err as Partial<Kinded>).code === 'string' &&
    typeof (err as Partial<Kinded>).kind === 'string'
  );
}
