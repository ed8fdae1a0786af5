// The host entry of a kvm2 configuration for tests and benchmarks: the machine's libvirtd
// reached through the harness's sshd, guests of type qemu (TCG: UEFI guests under KVM pause on
// these nested machines, HOST-SETUP.md) on a throwaway isolated network.
import type { Sshd } from './sshd.js';

export function testHost(
  sshd: Sshd,
  network: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    name: 'h1',
    uri: sshd.uri('/system'),
    pool: 'default',
    network,
    domainType: 'qemu',
    firmware: 'uefi',
    cpuMode: 'none',
    ...extra,
  };
}
