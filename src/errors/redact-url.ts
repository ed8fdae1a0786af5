// A URL as it may be printed or logged. Image URLs carry credentials in two places: userinfo
// (`https://user:token@…`, or a token alone as the user name) and the query of a signed URL
// (`?X-Amz-Signature=…`); a libvirt URI may carry a password. Messages, summaries and logs show
// the URL through this, so an operator still sees which server and path, never the secret.

const HIDDEN = '***';

/**
 * libvirt's drivers: in their URIs the user is an SSH account and the query names files
 * (socket, keyfile, known_hosts). In any other URL either may be the secret itself.
 */
const LIBVIRT_DRIVERS = new Set([
  'qemu',
  'test',
  'xen',
  'libxl',
  'lxc',
  'vbox',
  'esx',
  'bhyve',
  'ch',
  'vz',
]);

function isLibvirtUri(url: URL): boolean {
  return LIBVIRT_DRIVERS.has(url.protocol.slice(0, -1).split('+')[0] ?? '');
}

function hideQueryValues(search: string): string {
  if (search === '' || search === '?') return search;
  const pairs = search.slice(1).split('&');
  return `?${pairs.map((pair) => (pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=${HIDDEN}` : pair)).join('&')}`;
}

/**
 * The URL with its password hidden, and also its user name and every query value unless it is
 * a libvirt URI (whose user is an SSH account and whose query names files, not their contents). A text that is not a URL is hidden whole past
 * its scheme, unless it has no userinfo or query that could hold a secret.
 */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return /[@?]/.test(text) ? `${/^[a-z][a-z0-9+.-]*:/i.exec(text)?.[0] ?? ''}${HIDDEN}` : text;
  }
  const secretUser = !isLibvirtUri(url);
  let userinfo = '';
  if (url.username !== '' || url.password !== '') {
    const user = url.username === '' || !secretUser ? url.username : HIDDEN;
    userinfo = `${user}${url.password === '' ? '' : `:${HIDDEN}`}@`;
  }
  const search = secretUser ? hideQueryValues(url.search) : url.search;
  const authority = url.host === '' && !text.includes('//') ? '' : `//${userinfo}${url.host}`;
  // A fragment is never sent, but a password's unencoded '#' makes the rest of the URL one.
  const hash = url.hash === '' ? '' : `#${HIDDEN}`;
  return `${url.protocol}${authority}${url.pathname}${search}${hash}`;
}
