// What the libvirt client's domain tests share: a small domain to start and stop with virsh,
// and a record of one domain's lifecycle events with a wait for the next of a kind.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { DomainEventLifecycleMsg } from '../../src/libvirt/protocol.gen.js';
import { virsh } from './virsh.js';

/** How soon an event must be heard after the virsh command that caused it. */
export const WITHIN_MS = 2_000;

/**
 * A domain with no disk: the firmware alone keeps it running. Type qemu and no host CPU mode:
 * KVM guests with UEFI pause on these nested machines (HOST-SETUP.md).
 */
export function uefiDomainXml(name: string, devices = ''): string {
  return `<domain type='qemu'>
  <name>${name}</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os firmware='efi'>
    <type arch='x86_64' machine='q35'>hvm</type>
    <firmware><feature enabled='no' name='secure-boot'/><feature enabled='no' name='enrolled-keys'/></firmware>
  </os>
  <features><acpi/><apic/></features>${devices === '' ? '' : `\n  <devices>${devices}</devices>`}
</domain>`;
}

/** Defines `name` (uefiDomainXml) with virsh, its XML written in `dir`. */
export async function defineEventDomain(name: string, dir: string): Promise<void> {
  const file = path.join(dir, `${name}.xml`);
  await writeFile(file, uefiDomainXml(name));
  await virsh(['define', file]);
}

export async function removeEventDomain(name: string): Promise<void> {
  await virsh(['destroy', name]).catch(() => undefined);
  await virsh(['undefine', '--nvram', name]).catch(() => undefined);
}

/** One domain's lifecycle events as they arrive, and a way to wait for the next of a kind. */
export class Heard {
  readonly events: DomainEventLifecycleMsg[] = [];
  #waiters: (() => void)[] = [];

  constructor(private readonly name: string) {}

  readonly handler = (e: DomainEventLifecycleMsg): void => {
    if (e.dom.name !== this.name) return; // the machine's other domains
    this.events.push(e);
    for (const wake of this.#waiters.splice(0)) wake();
  };

  /** The first event of kind `event` after the first `after` heard, within `withinMs`. */
  async next(event: number, after: number, withinMs = WITHIN_MS): Promise<DomainEventLifecycleMsg> {
    const deadline = performance.now() + withinMs;
    for (;;) {
      const found = this.events.slice(after).find((e) => e.event === event);
      if (found !== undefined) return found;
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new Error(
          `no event ${event} within ${withinMs} ms; heard ${JSON.stringify(this.events.map((e) => e.event))}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
