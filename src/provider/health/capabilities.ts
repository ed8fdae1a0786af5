// Reading a host's capabilities XML (virConnectGetCapabilities; libvirt docs/formatcaps.rst)
// for the one question check() asks: can it run kvm2's guests with the configured domain type?
//   <capabilities>
//     <host>…</host>
//     <guest>
//       <os_type>hvm</os_type>
//       <arch name='x86_64'> … <domain type='qemu'/> <domain type='kvm'/> </arch>
//     </guest> …
//   </capabilities>
import { XmlError, childrenNamed, firstChild, readXml } from '../xml/types.js';

/** kvm2 builds x86_64 q35 guests only (SPEC §7). */
export const GUEST_ARCH = 'x86_64';

/**
 * The domain types (`qemu`, `kvm`, …) the host offers for full-virtualisation guests of `arch`,
 * in document order without repeats. Throws XmlError for text that is not a capabilities
 * document.
 */
export function guestDomainTypes(capabilitiesXml: string, arch = GUEST_ARCH): string[] {
  const root = readXml(capabilitiesXml);
  if (root.name !== 'capabilities') {
    throw new XmlError('ERR_XML_MALFORMED', `expected <capabilities>, got <${root.name}>`);
  }
  const types = new Set<string>();
  for (const guest of childrenNamed(root, 'guest')) {
    if (firstChild(guest, 'os_type')?.text.trim() !== 'hvm') continue;
    for (const archElement of childrenNamed(guest, 'arch')) {
      if (archElement.attributes.get('name') !== arch) continue;
      for (const domain of childrenNamed(archElement, 'domain')) {
        const type = domain.attributes.get('type');
        if (type !== undefined) types.add(type);
      }
    }
  }
  return [...types];
}
