// HTTP Basic authentication for the dashboard (RFC 7617), required by the config when the
// board listens beyond loopback (SPEC §2). Credentials are compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';

export interface BasicCredentials {
  readonly username: string;
  readonly password: string;
}

const REALM = 'kvm2 board';

/**
 * Equal in time independent of where the strings differ. Both sides are hashed first:
 * timingSafeEqual needs equal lengths, and comparing lengths directly would leak them.
 */
function safeEqual(given: string, expected: string): boolean {
  const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The user and password of an `Authorization: Basic …` header; undefined for anything else. */
export function parseBasicAuth(header: string | undefined): BasicCredentials | undefined {
  const match = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(header ?? '');
  if (match?.[1] === undefined) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function credentialsMatch(given: BasicCredentials, expected: BasicCredentials): boolean {
  // Both comparisons always run: stopping at a wrong user name would tell that it is wrong.
  const userOk = safeEqual(given.username, expected.username);
  const passwordOk = safeEqual(given.password, expected.password);
  return userOk && passwordOk;
}

/** Refuses every request without the expected credentials: 401 and a Basic challenge. */
export function basicAuth(expected: BasicCredentials): RequestHandler {
  return (req, res, next) => {
    const given = parseBasicAuth(req.headers.authorization);
    if (given !== undefined && credentialsMatch(given, expected)) {
      next();
      return;
    }
    res
      .status(401)
      .set('WWW-Authenticate', `Basic realm="${REALM}", charset="UTF-8"`)
      .type('text/plain')
      .send('authentication required\n');
  };
}
