import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyError } from '../../src/errors/classify.js';
import {
  InvalidInstanceIdError,
  KVM2_PREFIX,
  formatInstanceId,
  instanceVolumeOwner,
  isValidName,
  isValidUid,
  newUid,
  overlayVolumeName,
  parseInstanceId,
  instanceLockName,
  seedVolumeName,
  serialLogFile,
} from '../../src/provider/core/ids.js';

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);

describe('isValidName', () => {
  it.each(['a', '0', 'web-1', 'a'.repeat(63), '1-2-3', 'x9'])('accepts %s', (name) => {
    expect(isValidName(name)).toBe(true);
  });

  it.each(['', '-a', 'a-', 'A', 'web_1', 'web.1', 'a'.repeat(64), 'é', 'a b', 'a/b', '..', 'a\n'])(
    'refuses %j',
    (name) => {
      expect(isValidName(name)).toBe(false);
    },
  );
});

describe('instance ids', () => {
  it('parses <host>/<name>', () => {
    expect(parseInstanceId('hv1/web-1')).toEqual({ host: 'hv1', name: 'web-1' });
  });

  it('formats and parses back any pair of labels', () => {
    fc.assert(
      fc.property(label, label, (host, name) => {
        expect(parseInstanceId(formatInstanceId(host, name))).toEqual({ host, name });
      }),
    );
  });

  it.each([
    ['web-1', 'is not <host>/<name>'],
    ['hv1/web/1', 'is not <host>/<name>'],
    ['', 'is not <host>/<name>'],
    ['/web', `host "" is not a DNS label`],
    ['HV1/web', `host "HV1" is not a DNS label`],
    ['hv1/', `name "" is not a DNS label`],
    ['hv1/Web_1', `name "Web_1" is not a DNS label`],
  ])('refuses %j, saying why', (id, why) => {
    const err = (() => {
      try {
        parseInstanceId(id);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(InvalidInstanceIdError);
    expect((err as Error).message).toContain(why);
    expect(classifyError(err)).toBe('permanent');
  });

  it('cuts a huge id short in its message', () => {
    expect(() => parseInstanceId('x'.repeat(10_000))).toThrow(/^instance id "x{80}…" is not/);
  });

  it('refuses to format an invalid pair', () => {
    expect(() => formatInstanceId('hv1', 'no/slash')).toThrow(InvalidInstanceIdError);
  });
});

describe('newUid', () => {
  it('is a lowercase version-4 UUID', () => {
    const uid = newUid();
    expect(uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isValidUid(uid)).toBe(true);
  });

  it('does not repeat', () => {
    const uids = new Set(Array.from({ length: 10_000 }, () => newUid()));
    expect(uids.size).toBe(10_000);
  });

  it('refuses other shapes as uids', () => {
    expect(isValidUid('A0B1C2D3-0000-4000-8000-000000000000')).toBe(false);
    expect(isValidUid('not-a-uid')).toBe(false);
  });
});

describe('volume names', () => {
  it('prefixes every instance volume with kvm2-', () => {
    expect(KVM2_PREFIX).toBe('kvm2-');
    expect(overlayVolumeName('web-1')).toBe('kvm2-web-1.qcow2');
    expect(seedVolumeName('web-1')).toBe('kvm2-web-1-seed.iso');
  });

  it('refuses names that could escape the pool directory', () => {
    expect(() => overlayVolumeName('../etc')).toThrow(InvalidInstanceIdError);
    expect(() => seedVolumeName('a/b')).toThrow(InvalidInstanceIdError);
  });

  it('tells which instance owns a volume, and back again for any name', () => {
    fc.assert(
      fc.property(label, (name) => {
        expect(instanceVolumeOwner(overlayVolumeName(name))).toEqual({ name, role: 'overlay' });
        expect(instanceVolumeOwner(seedVolumeName(name))).toEqual({ name, role: 'seed' });
      }),
    );
    // An instance may itself be called "x-seed": its overlay is not a seed.
    expect(instanceVolumeOwner('kvm2-x-seed.qcow2')).toEqual({ name: 'x-seed', role: 'overlay' });
  });

  it('names the instance lock as every release so far has (workers of two releases share it)', () => {
    expect(instanceLockName('h1/web-1')).toBe('instance:h1/web-1');
  });

  it("names a serial log that no domain's own libvirt log (<domain>.log) can be", () => {
    expect(serialLogFile('/var/log/libvirt/qemu', 'web')).toBe('/var/log/libvirt/qemu/web.serial');
    expect(serialLogFile('/', 'web')).toBe('/web.serial');
    expect(() => serialLogFile('/var/log', '../etc/x')).toThrow(InvalidInstanceIdError);
    // libvirt logs a domain D to `<dir>/D.log`, and D may be any name without `/`, a foreign
    // domain `web.serial` included: so ours must not end in `.log` at all.
    fc.assert(
      fc.property(label, (name) => {
        expect(serialLogFile('/d', name).endsWith('.log')).toBe(false);
      }),
    );
  });

  it('owns nothing else: foreign volumes and base images', () => {
    expect(instanceVolumeOwner('web-1.qcow2')).toBeUndefined();
    expect(instanceVolumeOwner('kvm2-.qcow2')).toBeUndefined();
    expect(instanceVolumeOwner(`kvm2-base-${'a'.repeat(64)}.qcow2`)).toBeUndefined();
    expect(instanceVolumeOwner('kvm2-web-1.raw')).toBeUndefined();
  });
});
