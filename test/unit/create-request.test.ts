// A create request's disk size (src/provider/core/request.ts) against what the overlay kvm2
// writes can describe (src/provider/image/qcow2-overlay.ts): nothing validation passes may
// fail later, after the seed was written, as a RangeError taken for a passing fault.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseCreateRequest } from '../../src/provider/core/request.js';
import { qcow2Overlay } from '../../src/provider/image/qcow2-overlay.js';

const request = {
  host: 'h1',
  name: 'web-1',
  uid: '0b7e6f7c-3c1a-4d2e-9f00-5a6b7c8d9e0f',
  image: 'debian-12',
};
const overlayOf = (diskGiB: number): Buffer =>
  qcow2Overlay({
    virtualBytes: BigInt(diskGiB) * 2n ** 30n,
    backingPath: '/var/lib/libvirt/images/base.qcow2',
    backingFormat: 'qcow2',
  });

describe('a create request’s diskGiB', () => {
  it('takes the largest disk an overlay can describe, and refuses one more GiB naming the field', () => {
    const largest = parseCreateRequest({ ...request, diskGiB: 4096 }).diskGiB ?? 0;
    expect(() => overlayOf(largest)).not.toThrow();
    expect(() => overlayOf(largest + 1)).toThrow(RangeError);
    expect(() => parseCreateRequest({ ...request, diskGiB: largest + 1 })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_REQUEST',
        message: expect.stringContaining('request.diskGiB') as unknown,
      }),
    );
  });
});

describe('a create request’s user-data and network-config', () => {
  const gzip = (text: string): Buffer => gzipSync(Buffer.from(text));
  it.each<[string, string, RegExp]>([
    ['gzip read as latin1', gzip('#cloud-config\n').toString('latin1'), /compressed \(gzip\)/],
    ['gzip read as UTF-8', gzip('#cloud-config\n').toString('utf8'), /compressed \(gzip\)/],
    ['a NUL', '#cloud-config\n\0', /holds a NUL character/],
    ['a lone surrogate', '#cloud-config\n# \uD800\n', /holds a lone UTF-16 surrogate/],
  ])('refuses %s, naming the field and never the text', (_, text, reason) => {
    for (const field of ['userData', 'networkConfig']) {
      const err = (() => {
        try {
          parseCreateRequest({ ...request, [field]: text });
        } catch (e) {
          return e as Error & { code?: string };
        }
        throw new Error('accepted');
      })();
      expect(err.code).toBe('ERR_INVALID_REQUEST');
      expect(err.message).toMatch(new RegExp(`request\\.${field}: must be text`));
      expect(err.message).toMatch(reason);
      expect(err.message).not.toContain('cloud-config');
    }
  });

  it('takes any text as it is: cloud-config, scripts, MIME multipart, tabs, CRLF, emoji', () => {
    const text =
      'Content-Type: multipart/mixed; boundary="b"\r\nMIME-Version: 1.0\r\n\r\n--b\r\n' +
      'Content-Type: text/x-shellscript\r\n\r\n#!/bin/sh\n\techo 🚀 ünïcode\n--b--\r\n';
    expect(parseCreateRequest({ ...request, userData: text }).userData).toBe(text);
    expect(parseCreateRequest({ ...request, networkConfig: text }).networkConfig).toBe(text);
  });
});
