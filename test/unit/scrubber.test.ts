// The board's scrubbing of free text (board/redaction.ts): a job's secrets, whole and line by
// line, cut out of failure text and logs.
import { describe, expect, it } from 'vitest';
import { Scrubber } from '../../board/redaction.js';
import { REDACTED } from '../../queues/registry.js';

const USER_DATA = '#cloud-config\npassword: hunter2-long-secret\nruncmd:\n  - echo short\n';

function scrubberFor(userData: string): Scrubber {
  return Scrubber.forJob('create', { name: 'web-1', userData });
}

describe('Scrubber', () => {
  it('cuts the whole value before any of its lines', () => {
    const text = `rejected:\n${USER_DATA}end`;
    expect(scrubberFor(USER_DATA).scrub(text)).toBe(`rejected:\n${REDACTED}end`);
  });

  it('cuts each line of 8 characters or more, wherever it is quoted, and leaves shorter ones', () => {
    const scrubber = scrubberFor(USER_DATA);
    expect(
      scrubber.scrub(
        'line 2 was password: hunter2-long-secret, twice: password: hunter2-long-secret',
      ),
    ).toBe(`line 2 was ${REDACTED}, twice: ${REDACTED}`);
    // `runcmd:` is 7 characters: an ordinary word of a message stays.
    expect(scrubber.scrub('runcmd: failed')).toBe('runcmd: failed');
    expect(scrubber.scrub('- echo short')).toBe(REDACTED);
  });

  it('returns the same text when nothing matches, and the same answer when asked again', () => {
    const scrubber = scrubberFor(USER_DATA);
    const text = 'nothing secret here at all';
    expect(scrubber.scrub(text)).toBe(text);
    const quoted = 'x password: hunter2-long-secret y';
    expect(scrubber.scrub(quoted)).toBe(scrubber.scrub(quoted));
    expect(scrubber.scrub(quoted)).toBe(`x ${REDACTED} y`);
  });

  it('takes the longest fragment that starts at a position', () => {
    const userData = 'abcdefghij\nabcdefghijklmnop\n';
    const scrubber = scrubberFor(userData);
    expect(scrubber.scrub('[abcdefghijklmnop]')).toBe(`[${REDACTED}]`);
    expect(scrubber.scrub('[abcdefghijk]')).toBe(`[${REDACTED}k]`);
  });

  it('has nothing to cut for a job without secrets', () => {
    const scrubber = Scrubber.forJob('delete', { instanceId: 'kvm2-web-1' });
    expect(scrubber.empty).toBe(true);
    expect(scrubber.scrub('kvm2-web-1 is gone')).toBe('kvm2-web-1 is gone');
  });

  it('scrubs a failure: its reason and each stack line, leaving a job that never failed as it was', () => {
    const scrubber = scrubberFor(USER_DATA);
    const failed = scrubber.scrubFailure({
      failedReason: 'bad: password: hunter2-long-secret',
      stacktrace: ['Error: password: hunter2-long-secret', '    at x (y.js:1:1)'],
    });
    expect(failed.failedReason).toBe(`bad: ${REDACTED}`);
    expect(failed.stacktrace).toEqual([`Error: ${REDACTED}`, '    at x (y.js:1:1)']);
    const never = { failedReason: undefined as unknown as string, stacktrace: null };
    expect(scrubber.scrubFailure(never)).toEqual(never);
  });
});
