// A create request's disk size (src/provider/core/request.ts) against what the overlay kvm2
// writes can describe (src/provider/image/qcow2-overlay.ts): nothing validation passes may
// fail later, after the seed was written, as a RangeError taken for a passing fault.
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
