// The runtime the suite runs on is the one setup provides (scripts/node-runtime.sh): Node.js 22
// or newer, as package.json's engines ask, with ssh2's native crypto binding built for it. An
// addon built against other headers does not load, and ssh2 then quietly falls back to ciphers
// in JavaScript: the SSH transport works, only slower, so only a check like this one sees it.
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

describe('the Node.js runtime', () => {
  it('is at least the version package.json requires', async () => {
    const manifest = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { engines: { node: string } };
    const wanted = /^>=(\d+)\.(\d+)$/.exec(manifest.engines.node);
    expect(wanted, `engines.node ${manifest.engines.node}`).not.toBeNull();
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    const [wantMajor = 0, wantMinor = 0] = (wanted ?? []).slice(1).map(Number);
    expect(major * 1000 + minor, `node ${process.version}`).toBeGreaterThanOrEqual(
      wantMajor * 1000 + wantMinor,
    );
  });

  it("loads ssh2's native crypto binding (built against this node's headers)", () => {
    const crypto = require('ssh2/lib/protocol/crypto.js') as { bindingAvailable: boolean };
    expect(crypto.bindingAvailable, `ssh2's sshcrypto.node on node ${process.version}`).toBe(true);
  });
});
