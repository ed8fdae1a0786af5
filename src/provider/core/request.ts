// What a create asks for (SPEC §3 step 1), validated once with zod. Messages name the field
// (`request.name: …`) and never echo values: user-data may hold secrets.
import { z } from 'zod';
import { Kvm2Error } from '../../errors/error.js';
import { isXmlSafe, MAX_VCPUS, XML_UNSAFE_MESSAGE } from '../xml/types.js';
import { NAME_PATTERN, UID_PATTERN } from './ids.js';

/** cloud-init reads user-data of any size, but a seed is a disk image built in memory. */
export const USER_DATA_MAX_BYTES = 1024 * 1024;

const positiveInt = z.number().int('must be a whole number').positive('must be positive');

/**
 * Why `s` cannot go into the seed byte for byte, or undefined. A job carries text, written as
 * UTF-8: a lone surrogate would become U+FFFD, and binary (gzip, whose first byte is 0x1f, or
 * anything with a NUL) read into a string has lost its bytes already.
 */
function textProblem(s: string): string | undefined {
  if (s.startsWith('\x1f')) return 'must be text: compressed (gzip) data is not supported';
  if (s.includes('\0')) return 'must be text: it holds a NUL character';
  if (/\p{Cs}/u.test(s)) return 'must be text: it holds a lone UTF-16 surrogate';
  return undefined;
}

const seedText = (schema: z.ZodString): z.ZodString =>
  schema.superRefine((s, ctx) => {
    const problem = textProblem(s);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

export const createRequestSchema = z
  .strictObject({
    host: z.string().regex(NAME_PATTERN, 'must be a host name from the configuration').optional(),
    zone: z.string().regex(NAME_PATTERN, 'must be a zone name from the configuration').optional(),
    name: z
      .string()
      .regex(
        NAME_PATTERN,
        'must be a DNS label: a-z, 0-9 and dashes, 1 to 63, no dash at the ends',
      ),
    uid: z.string().regex(UID_PATTERN, 'must be a lowercase UUID made by the producer'),
    // The image's name and the tag go into the domain's XML (its metadata): refused here, at
    // enqueue, by the rule the XML builder applies, not after the disks were made.
    image: z
      .string()
      .min(1, 'must name an image from the configuration')
      // The configuration's image names are DNS labels: a longer name is no image of it.
      .max(63, 'must be at most 63 characters')
      .refine(isXmlSafe, XML_UNSAFE_MESSAGE),
    tag: z
      .string()
      .max(253, 'must be at most 253 characters')
      .refine(isXmlSafe, XML_UNSAFE_MESSAGE)
      .default(''),
    userData: seedText(z.string())
      .refine((s) => Buffer.byteLength(s) <= USER_DATA_MAX_BYTES, {
        message: `must be at most ${USER_DATA_MAX_BYTES} bytes`,
      })
      .default(''),
    networkConfig: seedText(z.string().max(65536, 'must be at most 65536 characters')).optional(),
    vcpus: positiveInt.max(MAX_VCPUS, `must be at most ${MAX_VCPUS}`).optional(),
    memoryMiB: positiveInt.max(4 * 1024 * 1024, 'must be at most 4 TiB').optional(),
    // The overlay kvm2 writes has one cluster of L1 table: 8192 entries of 512 MiB
    // (image/qcow2-overlay.ts). Refused here, before the seed is written.
    diskGiB: positiveInt.max(4 * 1024, 'must be at most 4 TiB').optional(),
  })
  .refine((r) => (r.host === undefined) !== (r.zone === undefined), {
    message: 'name exactly one of host and zone',
    path: ['host'],
  });

export type CreateRequest = z.input<typeof createRequestSchema>;
export type ValidCreateRequest = z.output<typeof createRequestSchema>;

// Requests this process has validated already (frozen, so they cannot change after): the worker
// validates a create job's data once, and the provider then takes its request as it is.
const validated = new WeakSet<object>();

/**
 * Marks a request a schema extending createRequestSchema has validated (the job registry's),
 * so the provider does not parse it again. Freezes it.
 */
export function markValidated(request: ValidCreateRequest): ValidCreateRequest {
  validated.add(Object.freeze(request));
  return request;
}

export function parseCreateRequest(input: unknown): ValidCreateRequest {
  if (typeof input === 'object' && input !== null && validated.has(input)) {
    return input as ValidCreateRequest;
  }
  const result = createRequestSchema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => {
    const at = i.path.length === 0 ? 'request' : `request.${i.path.map(String).join('.')}`;
    return `${at}: ${i.message}`;
  });
  throw new Kvm2Error('ERR_INVALID_REQUEST', issues.join('; '));
}
