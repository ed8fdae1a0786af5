// The one job registry (SPEC §8): job name → zod schema → TypeScript type, shared by producers
// (validate before anything reaches Redis), workers (validate again: Redis may hold anything)
// and the dashboard (redaction). Messages name the field (`job.create.name: …`) and never echo
// a value: user-data and network-config may hold secrets.
import { z } from 'zod';
import { Kvm2Error } from '../src/errors/error.js';
import { NAME_PATTERN, parseInstanceId } from '../src/provider/core/ids.js';
import {
  createRequestSchema,
  markValidated,
  type ValidCreateRequest,
} from '../src/provider/core/request.js';

/** W3C Trace Context (https://www.w3.org/TR/trace-context/), as propagation.inject writes it. */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

export const traceContextSchema = z.strictObject({
  traceparent: z.string().regex(TRACEPARENT, 'must be a W3C traceparent'),
  tracestate: z.string().max(512, 'must be at most 512 characters').optional(),
});
export type TraceContext = z.output<typeof traceContextSchema>;

const generation = z
  .number()
  .int('must be a whole number')
  .positive('must be a positive generation');

const instanceId = z.string().refine(
  (id) => {
    try {
      parseInstanceId(id);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be an instance id <host>/<name> (two DNS labels)' },
);

export const jobSchemas = {
  /** The create request (SPEC §3) plus what the producer adds. */
  create: createRequestSchema.safeExtend({
    generation,
    traceContext: traceContextSchema.optional(),
    /** Whether the job waits for the guest's address (SPEC §8); default true. */
    wait: z.boolean().optional(),
  }),
  delete: z.strictObject({
    id: instanceId,
    generation,
    traceContext: traceContextSchema.optional(),
  }),
  get: z.strictObject({ id: instanceId }),
  gc: z.strictObject({
    // An empty tag would match every untagged instance: GC takes a tag on purpose.
    tag: z.string().min(1, 'must not be empty').max(253, 'must be at most 253 characters'),
    keep: z.array(instanceId).max(100_000, 'must list at most 100000 ids'),
    graceMs: z.number().int('must be a whole number').nonnegative('must not be negative'),
    /**
     * How many requests had been made when the app asked for this GC (the client sets it): the
     * keep list is as of then, so a request made since, before the GC began, wins too.
     */
    requestsBefore: z
      .number()
      .int('must be a whole number')
      .nonnegative('must not be negative')
      .optional(),
    traceContext: traceContextSchema.optional(),
  }),
  health: z.strictObject({
    host: z.string().regex(NAME_PATTERN, 'must be a host name from the configuration'),
  }),
} as const;

export type JobName = keyof typeof jobSchemas;
export const JOB_NAMES = Object.keys(jobSchemas) as readonly JobName[];

/** What a job carries once validated (defaults applied). */
export type JobData<N extends JobName> = z.output<(typeof jobSchemas)[N]>;
/** What a producer may hand in. */
export type JobInput<N extends JobName> = z.input<(typeof jobSchemas)[N]>;

export function isJobName(name: string): name is JobName {
  return Object.hasOwn(jobSchemas, name);
}

/**
 * A delete's data in its usual form, `{ id, generation }` and nothing else, accepted by the
 * same checks as its schema without zod, which costs ~5 µs a validation on the job path (the
 * producer's and the worker's; bench/queue's profile). Anything else, valid or not, goes
 * through the schema: undefined here never refuses, it only passes the data on.
 */
function plainDelete(data: unknown): JobData<'delete'> | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  if (Object.getPrototypeOf(data) !== Object.prototype || Object.keys(data).length !== 2) {
    return undefined;
  }
  const { id, generation } = data as { readonly id?: unknown; readonly generation?: unknown };
  if (typeof id !== 'string' || typeof generation !== 'number') return undefined;
  if (!Number.isSafeInteger(generation) || generation <= 0) return undefined;
  try {
    parseInstanceId(id);
  } catch {
    return undefined;
  }
  return { id, generation };
}

/**
 * The job's data, validated; else a permanent Kvm2Error naming every bad field. Worker and
 * producer both call it: a payload forced into Redis by hand fails the same way.
 */
export function validateJob<N extends JobName>(name: N, data: unknown): JobData<N>;
export function validateJob(name: string, data: unknown): JobData<JobName>;
export function validateJob(name: string, data: unknown): JobData<JobName> {
  if (!isJobName(name)) {
    const shown = JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
    throw new Kvm2Error(
      'ERR_INVALID_JOB',
      `job: unknown job name ${shown} (expected one of ${JOB_NAMES.join(', ')})`,
    );
  }
  if (name === 'delete') {
    const plain = plainDelete(data);
    if (plain !== undefined) return plain;
  }
  const result = jobSchemas[name].safeParse(data);
  if (result.success) return result.data;
  // zod's own messages name types and keys, never the input's values.
  const issues = result.error.issues.map((issue) => {
    const at = ['job', name, ...issue.path.map(String)].join('.');
    return `${at}: ${issue.message}`;
  });
  throw new Kvm2Error('ERR_INVALID_JOB', issues.join('; '));
}

/**
 * A create's progress as its job records it (BullMQ's job progress), read by `kvm2 create
 * --wait` and by the worker's address wait.
 */
export const CREATE_PHASES = ['queued', 'download', 'volumes', 'boot', 'address'] as const;
export type CreatePhase = (typeof CREATE_PHASES)[number];

export interface CreateProgress {
  readonly phase: CreatePhase;
  /** The address wait's deadline (ms since the epoch), once the domain runs. */
  readonly deadline?: number;
  /** While this create fills the image cache: bytes streamed so far, and of how many. */
  readonly bytes?: number;
  readonly totalBytes?: number;
}

/** The create request inside a validated create job's data, as the provider takes it. */
export function createRequestOf(data: JobData<'create'>): ValidCreateRequest {
  const { generation: _g, traceContext: _t, wait: _w, ...request } = data;
  return markValidated(request);
}

export const REDACTED = '[redacted]';
const SECRET_FIELDS = ['userData', 'networkConfig'] as const;

/**
 * A copy of the job's data fit for the dashboard and logs: user-data and network-config
 * replaced by `[redacted]`. It takes any data (a malformed job too) and any job name: a
 * secret field is hidden wherever it turns up at the top level.
 */
export function redactJobData(_name: string, data: unknown): unknown {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  const record = data as Record<string, unknown>;
  if (!SECRET_FIELDS.some((field) => Object.hasOwn(record, field))) return data;
  const copy: Record<string, unknown> = { ...record };
  for (const field of SECRET_FIELDS) {
    if (Object.hasOwn(copy, field)) copy[field] = REDACTED;
  }
  return copy;
}
