// The one failure family of the seed builder: its input cannot make a seed. Retrying never
// helps, so the kind is always `permanent`. Messages name the field and sizes, never content:
// user-data may hold secrets (SPEC §6).
import { Kvm2Error } from '../../errors/error.js';

export type SeedErrorCode =
  /** A file name outside 1..64 chars of [a-z0-9._-], a path, or a duplicate. */
  | 'ERR_SEED_FILE_NAME'
  /** The files together exceed the seed's size cap. */
  | 'ERR_SEED_TOO_LARGE'
  /** A volume label, timestamp, identity field, MIME part or boundary that cannot be written. */
  | 'ERR_SEED_INVALID'
  /** A given MIME boundary occurs inside a part it would have to delimit. */
  | 'ERR_SEED_BOUNDARY_IN_CONTENT';

export class SeedError extends Kvm2Error {
  declare readonly code: SeedErrorCode;
  override name = 'SeedError';

  constructor(
    code: SeedErrorCode,
    /** What was wrong, as a path into the input: `files[2].name`, `userData`, `boundary`. */
    readonly field: string,
    message: string,
  ) {
    super(code, `${field}: ${message}`);
  }
}

/** A value quoted for an error message: JSON-escaped and cut short. Not for secret fields. */
export function quoteForError(value: string): string {
  const max = 80;
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
}
