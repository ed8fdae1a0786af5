// What a process that uses only the libvirt client loads (src/libvirt/tracing.ts): given no
// tracer, the client makes no spans and never loads the OpenTelemetry API (~50 ES modules, half
// of the client's load time: docs/benchmarks.md, #20's sixth slices), nor the SSH transport
// when it dials the UNIX socket. A node process of its own on the built client, as
// bench/rpc's upload child runs it, recording every module node resolves; a call on the real
// daemon shows the client works without them. (Spans when a tracer is given:
// libvirt-telemetry.test.ts.)
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BUILD_DIR } from '../harness/build.js';
import { virsh } from '../harness/virsh.js';

const run = promisify(execFile);

const CHILD = `
import { registerHooks } from 'node:module';
const urls = [];
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    urls.push(resolved.url);
    return resolved;
  },
});
const dir = process.env.KVM2_BUILD;
const { LibvirtConnection } = await import(dir + '/src/libvirt/connection.js');
const { ConnectGetHostname } = await import(dir + '/src/libvirt/protocol.gen.js');
const { parseLibvirtUri } = await import(dir + '/src/libvirt/transport/uri.js');
const conn = await LibvirtConnection.connect(parseLibvirtUri('qemu:///system'), { host: 'load' });
const { hostname } = await conn.call(ConnectGetHostname, undefined);
await conn.close();
console.log(JSON.stringify({ hostname, urls }));
`;

describe('the libvirt client on its own', () => {
  it('dials and calls without loading OpenTelemetry or ssh2 when given no tracer', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CHILD], {
      env: { ...process.env, KVM2_BUILD: BUILD_DIR },
    });
    const { hostname, urls } = JSON.parse(stdout) as { hostname: string; urls: string[] };
    expect(hostname).toBe((await virsh(['hostname'])).trim());
    // The client's own modules were resolved through the hook: the list is not empty by accident.
    expect(urls.some((u) => u.endsWith('/src/libvirt/rpc-client.js'))).toBe(true);
    expect(urls.filter((u) => u.includes('@opentelemetry'))).toEqual([]);
    expect(urls.filter((u) => u.includes('/ssh2/') || u.endsWith('/transport/ssh.js'))).toEqual([]);
  });
});
