import { describe, expect, it } from 'vitest';
import { Kvm2Error } from '../../src/errors/error.js';
import { parseCreateRequest } from '../../src/provider/core/request.js';
import {
  createRequestOf,
  JOB_NAMES,
  jobSchemas,
  REDACTED,
  redactJobData,
  validateJob,
  type JobName,
} from '../../queues/registry.js';
import { allQueueNames, hostOfQueue, hostQueueName } from '../../queues/names.js';

const UID = '0b7e6f7c-3c1a-4d2e-9f00-5a6b7c8d9e0f';
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const good: Record<JobName, Record<string, unknown>> = {
  create: {
    host: 'h1',
    name: 'web-1',
    uid: UID,
    image: 'debian-12',
    userData: '#cloud-config\npassword: hunter2\n',
    generation: 3,
    traceContext: { traceparent: TRACEPARENT },
    wait: false,
  },
  delete: { id: 'h1/web-1', generation: 4 },
  get: { id: 'h1/web-1' },
  gc: { tag: 'ci', keep: ['h1/web-1'], graceMs: 60_000 },
  health: { host: 'h1' },
};

/** The error validateJob throws, or a failure when it does not throw. */
function refusal(name: string, data: unknown): Kvm2Error {
  try {
    validateJob(name, data);
  } catch (err) {
    expect(err).toBeInstanceOf(Kvm2Error);
    return err as Kvm2Error;
  }
  throw new Error('expected validateJob to refuse the payload');
}

describe('job registry', () => {
  it.each(JOB_NAMES)('accepts a good %s payload', (name) => {
    expect(() => validateJob(name, good[name])).not.toThrow();
  });

  it('applies the create request defaults', () => {
    const { userData: _u, ...rest } = good.create;
    const data = validateJob('create', rest);
    expect(data.tag).toBe('');
    expect(data.userData).toBe('');
    expect(data.generation).toBe(3);
  });

  const bad: [JobName, Record<string, unknown>, string][] = [
    ['create', { ...good.create, name: 'Web_1' }, 'job.create.name:'],
    ['create', { ...good.create, uid: 'not-a-uuid' }, 'job.create.uid:'],
    ['create', { ...good.create, generation: 0 }, 'job.create.generation:'],
    ['create', { ...good.create, generation: undefined }, 'job.create.generation:'],
    [
      'create',
      { ...good.create, traceContext: { traceparent: 'x' } },
      'job.create.traceContext.traceparent:',
    ],
    ['create', { ...good.create, wait: 'yes' }, 'job.create.wait:'],
    ['create', { ...good.create, zone: 'z1' }, 'job.create.host:'],
    ['create', { ...good.create, vcpus: 1.5 }, 'job.create.vcpus:'],
    ['create', { ...good.create, extra: 1 }, 'job.create:'],
    ['delete', { id: 'web-1', generation: 1 }, 'job.delete.id:'],
    ['delete', { id: 'h1/web-1' }, 'job.delete.generation:'],
    ['get', { id: 'h1/Web' }, 'job.get.id:'],
    ['gc', { ...good.gc, tag: '' }, 'job.gc.tag:'],
    ['gc', { ...good.gc, keep: ['nope'] }, 'job.gc.keep.0:'],
    ['gc', { ...good.gc, graceMs: -1 }, 'job.gc.graceMs:'],
    ['health', { host: 'H 1' }, 'job.health.host:'],
  ];

  it.each(bad)('refuses a bad %s payload naming the field (%#)', (name, data, field) => {
    const err = refusal(name, data);
    expect(err.code).toBe('ERR_INVALID_JOB');
    expect(err.kind).toBe('permanent');
    expect(err.message).toContain(field);
  });

  it('never echoes values in its messages', () => {
    const secret = 'Hunter2 Very Secret';
    const err = refusal('create', {
      ...good.create,
      name: secret,
      userData: 7,
      networkConfig: secret,
      image: 42,
    });
    expect(err.message).toContain('job.create.name:');
    expect(err.message).toContain('job.create.userData:');
    expect(err.message).not.toContain(secret);
    const big = 'x'.repeat(1024 * 1024 + 1);
    expect(refusal('create', { ...good.create, userData: big }).message).not.toContain('xxxx');
  });

  it('refuses an unknown job name and a non-object payload', () => {
    expect(refusal('reboot', {}).message).toMatch(/^job: unknown job name "reboot"/);
    expect(refusal('get', 'h1/web-1').message).toMatch(/^job\.get: /);
  });

  it('redacts user-data and network-config, and nothing else', () => {
    const data = { ...good.create, networkConfig: 'version: 2' };
    const shown = redactJobData('create', data) as Record<string, unknown>;
    expect(shown['userData']).toBe(REDACTED);
    expect(shown['networkConfig']).toBe(REDACTED);
    expect(shown['name']).toBe('web-1');
    expect(good.create['userData']).toContain('hunter2');
    expect(JSON.stringify(shown)).not.toContain('hunter2');
  });

  it('redacts malformed data too, and leaves other data as is', () => {
    expect(redactJobData('whatever', { userData: 5 })).toEqual({ userData: REDACTED });
    expect(redactJobData('delete', good.delete)).toBe(good.delete);
    expect(redactJobData('create', null)).toBeNull();
    expect(redactJobData('create', 'text')).toBe('text');
  });
});

describe("a delete's data, accepted without zod in its usual form", () => {
  const inputs: unknown[] = [
    { id: 'h1/web-1', generation: 4 },
    { generation: 4, id: 'h1/web-1' },
    { id: 'h1/web-1', generation: Number.MAX_SAFE_INTEGER },
    { id: 'h1/web-1', generation: 2 ** 53 },
    { id: 'h1/web-1', generation: 1.5 },
    { id: 'h1/web-1', generation: 0 },
    { id: 'h1/web-1', generation: -1 },
    { id: 'h1/web-1', generation: Number.NaN },
    { id: 'h1/web-1', generation: '4' },
    { id: 'h1/Web_1', generation: 4 },
    { id: 'h1/web-1/x', generation: 4 },
    { id: 4, generation: 4 },
    { id: 'h1/web-1', generation: 4, extra: 1 },
    { id: 'h1/web-1', generation: 4, traceContext: { traceparent: TRACEPARENT } },
    { id: 'h1/web-1', generation: 4, traceContext: undefined },
    { id: 'h1/web-1', other: 4 },
    Object.assign(Object.create(null) as object, { id: 'h1/web-1', generation: 4 }),
    [],
    'h1/web-1',
  ];

  it('accepts and refuses exactly as its schema does, with the same data and messages', () => {
    const outcome = (run: () => unknown): unknown => {
      try {
        return { data: run() };
      } catch (err) {
        return { error: (err as Error).message };
      }
    };
    let accepted = 0;
    for (const input of inputs) {
      const ours = outcome(() => validateJob('delete', input));
      const schema = jobSchemas.delete.safeParse(input);
      if (schema.success) {
        accepted++;
        expect(ours, JSON.stringify(input)).toEqual({ data: schema.data });
        expect(JSON.stringify((ours as { data: unknown }).data)).toBe(JSON.stringify(schema.data));
      } else {
        expect((ours as { error?: string }).error, JSON.stringify(input)).toMatch(/^job\.delete/);
      }
    }
    expect(accepted).toBe(6);
  });
});

describe('queue names', () => {
  it('names one queue per host, plus gc and health, with no colon', () => {
    expect(hostQueueName('h1')).toBe('host.h1');
    expect(hostOfQueue('host.h1')).toBe('h1');
    expect(hostOfQueue('gc')).toBeUndefined();
    expect(allQueueNames([{ name: 'a' }, { name: 'b' }])).toEqual([
      'host.a',
      'host.b',
      'gc',
      'health',
    ]);
    expect(() => hostQueueName('a:b')).toThrow(TypeError);
  });

  it('answers the same for a queue name asked again (answers are kept per name)', () => {
    for (let round = 0; round < 2; round++) {
      expect(hostOfQueue('host.h2')).toBe('h2');
      expect(hostOfQueue('host.')).toBeUndefined();
      expect(hostOfQueue('host.Bad_Name')).toBeUndefined();
      expect(hostOfQueue('health')).toBeUndefined();
      expect(hostOfQueue('hostess')).toBeUndefined();
    }
  });
});

describe('a create request, parsed once per process', () => {
  it("is the job's data without the job's fields, frozen, and taken by the provider as it is", () => {
    const request = createRequestOf(validateJob('create', good.create));
    expect(request).not.toHaveProperty('generation');
    expect(request).not.toHaveProperty('traceContext');
    expect(request).not.toHaveProperty('wait');
    expect(request).toMatchObject({ host: 'h1', name: 'web-1', tag: '', image: 'debian-12' });
    expect(Object.isFrozen(request)).toBe(true);
    // The provider's parse returns the validated object itself: no second zod pass.
    expect(parseCreateRequest(request)).toBe(request);
  });

  it('parses anything else, as a copy, and refuses what is invalid', () => {
    const raw = { host: 'h1', name: 'web-1', uid: UID, image: 'debian-12' };
    const parsed = parseCreateRequest(raw);
    expect(parsed).not.toBe(raw);
    expect(parsed.tag).toBe('');
    expect(() => parseCreateRequest({ ...raw, name: 'Not A Name' })).toThrow(/request\.name/);
  });
});

describe('what the domain XML will carry, refused at enqueue', () => {
  // Passed here, a tag or image name with a control character would fail only when the domain
  // XML is built, after the base image, overlay and seed were made (and left behind).
  it.each([
    ['tag', 'ci\u0007'],
    ['tag', 'line\nbreak'],
    ['tag', 'nul\u0000'],
    ['tag', 'bad\ufffe'],
    ['image', 'debian\u001b[31m'],
    ['image', 'lone\ud800'],
  ])('%s %j', (field, value) => {
    const err = refusal('create', { ...good.create, [field]: value });
    expect(err.code).toBe('ERR_INVALID_JOB');
    expect(err.kind).toBe('permanent');
    expect(err.message).toContain(`${field}: must not contain control characters`);
    expect(() =>
      parseCreateRequest({ ...good.create, [field]: value, generation: undefined }),
    ).toThrow(/request\.(tag|image): must not contain control characters/);
  });

  it('refuses an image name longer than any the configuration can hold, quoting none of it', () => {
    // Image names in the configuration are DNS labels: 63 characters at most. A longer one
    // would be an unknown image at the worker, with the whole name in the error.
    const image = 'i'.repeat(1 << 20);
    const err = refusal('create', { ...good.create, image });
    expect(err.message).toContain('image: must be at most 63 characters');
    expect(err.message.length).toBeLessThan(500);
    expect(() => parseCreateRequest({ ...good.create, image, generation: undefined })).toThrow(
      /request\.image: must be at most 63 characters/,
    );
    expect(validateJob('create', { ...good.create, image: 'i'.repeat(63) }).image).toHaveLength(63);
  });

  it('takes a tag with spaces, punctuation and any printable Unicode', () => {
    const tag = 'team: egress / eu-west ✓ (ü)';
    expect(validateJob('create', { ...good.create, tag }).tag).toBe(tag);
  });
});
