// Configurations for the configuration's tests: one local host, a host merged with a patch,
// and the issue lines a refused configuration gives.
import { expect } from 'vitest';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { ConfigError, parseConfig } from '../../src/provider/config/load.js';

export const local = { name: 'hv1', uri: 'qemu:///system', network: 'default' };

/** The issue lines of the ConfigError that parsing `input` throws. */
export function issuesOf(input: unknown): readonly string[] {
  try {
    parseConfig(input);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues;
  }
  throw new Error('expected the configuration to be refused');
}

/** A configuration with one host and `patch` merged at the top. */
export const withHost = (
  patch: Record<string, unknown> = {},
  host: Record<string, unknown> = {},
) => ({
  hosts: [{ ...local, ...host }],
  ...patch,
});

/** The message parseLibvirtUri refuses `uri` with. */
export function uriMessage(uri: string): string {
  try {
    parseLibvirtUri(uri);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${uri} parses`);
}
