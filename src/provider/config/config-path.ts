// How a configuration issue names where it is: `kvm2.` and the keys down to it, without
// printing what a mistyped key may hold.

/** `kvm2.hosts[1].uri`, `kvm2.images.debian-12.url`, `kvm2.images["a b"]`. */
export function formatPath(segments: readonly PropertyKey[]): string {
  let out = 'kvm2';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (typeof s === 'string' && /^[A-Za-z_][\w-]*$/.test(s)) out += `.${s}`;
    else out += `[${JSON.stringify(shownKey(typeof s === 'symbol' ? (s.description ?? '?') : s))}]`;
  }
  return out;
}

// `password:hunter2` (no space after the colon) is one key to YAML and JSON: a key is shown up to
// its first separator, so what follows, often the value, is never printed.
const KEY_SEPARATOR = /[:=@\s]/;
const MAX_SHOWN_KEY = 64;

function shownKey(key: string): string {
  const cut = key.search(KEY_SEPARATOR);
  if (cut === -1 && key.length <= MAX_SHOWN_KEY) return key;
  return `${key.slice(0, Math.min(cut === -1 ? key.length : cut, MAX_SHOWN_KEY))}…`;
}
