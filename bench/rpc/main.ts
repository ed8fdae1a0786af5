// bench/rpc: our libvirt client against libvirt's own C client (Debian's python3-libvirt, run
// with /usr/bin/python3), the same calls against the same daemon, in one run.
//
//   npm run bench:rpc [-- --calls 20000 --upload-mib 1024 --skip-upload]
//
// Rates are ConnectGetLibVersion round trips per second: the cheapest call there is, so the
// figure is per-call overhead (ours, the daemon's, the transport's). The daemon's ceiling is
// the combined rate of several C clients on their own connections.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { ConnectGetLibVersion } from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/uri.js';
import { startSshd } from '../../test/harness/sshd.js';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const PY = '/usr/bin/python3';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const CALLS = arg('calls', 20_000);
const UPLOAD_MIB = arg('upload-mib', 1024);
const SKIP_UPLOAD = process.argv.includes('--skip-upload');

interface Rate {
  calls: number;
  seconds: number;
  rate: number;
}

async function cClient(uri: string, calls: number, threads: number): Promise<Rate> {
  const { stdout } = await run(PY, [
    path.join(here, 'c_client.py'),
    uri,
    String(calls),
    String(threads),
  ]);
  return JSON.parse(stdout) as Rate;
}

/** Several C clients, each on its own connection, at once: the daemon's ceiling. */
async function ceiling(uri: string, processes: number, calls: number): Promise<Rate> {
  const t0 = performance.now();
  const rates = await Promise.all(
    Array.from({ length: processes }, () => cClient(uri, Math.floor(calls / processes), 1)),
  );
  const seconds = (performance.now() - t0) / 1000;
  const total = rates.reduce((s, r) => s + r.calls, 0);
  // Sum of the individual rates: start-up skew would otherwise count against the daemon.
  return { calls: total, seconds, rate: rates.reduce((s, r) => s + r.rate, 0) };
}

async function ours(conn: LibvirtConnection, calls: number, inFlight: number): Promise<Rate> {
  for (let i = 0; i < 200; i++) await conn.call(ConnectGetLibVersion, undefined);
  const per = Math.floor(calls / inFlight);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = 0; i < per; i++) await conn.call(ConnectGetLibVersion, undefined);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { calls: per * inFlight, seconds, rate: (per * inFlight) / seconds };
}

const rows: string[] = [];
function row(
  what: string,
  oursRate: number,
  refRate: number,
  refName: string,
  target: number,
): void {
  const ratio = oursRate / refRate;
  const line = `${what.padEnd(34)} ours ${oursRate.toFixed(0).padStart(7)}/s   ${refName.padEnd(22)} ${refRate
    .toFixed(0)
    .padStart(
      7,
    )}/s   ratio ${ratio.toFixed(2)}x   target >= ${target}x ${ratio >= target ? 'ok' : 'MISSED'}`;
  rows.push(line);
  console.log(line);
}

async function rpcSection(
  label: string,
  ourUri: string,
  cUri: string,
  ssh: boolean,
): Promise<void> {
  console.log(`\n== ${label} (${CALLS} calls each)`);
  const conn = await LibvirtConnection.connect(parseLibvirtUri(ourUri), { host: 'bench' });
  try {
    const cSeq = await cClient(cUri, CALLS, 1);
    const oSeq = await ours(conn, CALLS, 1);
    row(`${label}: sequential`, oSeq.rate, cSeq.rate, 'C client sequential', ssh ? 1.0 : 0.8);
    if (!ssh) {
      const ceil4 = await ceiling(cUri, 4, CALLS);
      const ceil8 = await ceiling(cUri, 8, CALLS);
      const ceil = Math.max(ceil4.rate, ceil8.rate);
      console.log(
        `   daemon ceiling: 4 C clients ${ceil4.rate.toFixed(0)}/s, 8 C clients ${ceil8.rate.toFixed(0)}/s`,
      );
      for (const n of [8, 32]) {
        const o = await ours(conn, CALLS, n);
        row(`${label}: ${n} in flight`, o.rate, ceil, 'daemon ceiling', 0.9);
      }
    } else {
      for (const n of [8, 32]) {
        const o = await ours(conn, CALLS, n);
        row(
          `${label}: ${n} in flight`,
          o.rate,
          cSeq.rate,
          'C client sequential',
          n === 8 ? 2.0 : 2.0,
        );
      }
    }
  } finally {
    await conn.close();
  }
}

function peakRssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

async function uploadSection(): Promise<void> {
  console.log(`\n== upload of a ${UPLOAD_MIB} MiB volume over the UNIX socket`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-bench-'));
  const file = path.join(dir, 'image.raw');
  try {
    // Incompressible content, written once, read from the page cache by both sides.
    const block = Buffer.alloc(1 << 20);
    const fd = fs.openSync(file, 'w');
    for (let i = 0; i < UPLOAD_MIB; i++) {
      for (let j = 0; j < block.length; j += 4)
        block.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, j);
      fs.writeSync(fd, block);
    }
    fs.closeSync(fd);
    const bytes = UPLOAD_MIB << 20;

    const volXml = (name: string): string =>
      `<volume><name>${name}</name><capacity unit='bytes'>${bytes}</capacity><target><format type='raw'/></target></volume>`;
    const vols = ['kvm2-bench-virsh.raw', 'kvm2-bench-ours.raw'];
    for (const v of vols) {
      await run('virsh', ['-q', 'vol-delete', '--pool', 'default', v]).catch(() => undefined);
      fs.writeFileSync(path.join(dir, `${v}.xml`), volXml(v));
      await run('virsh', ['-q', 'vol-create', 'default', path.join(dir, `${v}.xml`)]);
    }
    try {
      const t0 = performance.now();
      const virshChild = spawn('virsh', ['-q', 'vol-upload', '--pool', 'default', vols[0]!, file], {
        stdio: 'inherit',
      });
      let virshPeak = 0;
      const sampler = setInterval(() => {
        try {
          virshPeak = Math.max(virshPeak, peakRssMiB(virshChild.pid!));
        } catch {
          /* exited */
        }
      }, 50);
      await new Promise<void>((res, rej) =>
        virshChild.on('exit', (c) => (c === 0 ? res() : rej(new Error(`virsh exited ${c}`)))),
      );
      clearInterval(sampler);
      const virshSec = (performance.now() - t0) / 1000;

      const { stdout } = await run(process.execPath, [
        '--import',
        'tsx',
        path.join(here, 'upload-child.ts'),
        'qemu:///system',
        'default',
        vols[1]!,
        file,
      ]);
      const child = JSON.parse(stdout) as { seconds: number; peakRssMiB: number };
      const mibps = (s: number): number => UPLOAD_MIB / s;
      const ratio = mibps(child.seconds) / mibps(virshSec);
      const line = `upload ${UPLOAD_MIB} MiB                      ours ${mibps(child.seconds).toFixed(0)} MiB/s (peak RSS ${child.peakRssMiB.toFixed(0)} MiB)   virsh vol-upload ${mibps(virshSec).toFixed(0)} MiB/s (peak RSS ${virshPeak.toFixed(0)} MiB)   ratio ${ratio.toFixed(2)}x   target >= 0.9x and RSS < 128 MiB ${ratio >= 0.9 && child.peakRssMiB < 128 ? 'ok' : 'MISSED'}`;
      rows.push(line);
      console.log(line);
    } finally {
      for (const v of vols)
        await run('virsh', ['-q', 'vol-delete', '--pool', 'default', v]).catch(() => undefined);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`bench/rpc on ${os.cpus().length} cores, node ${process.version}`);
  await rpcSection('unix socket', 'qemu:///system', 'qemu:///system', false);

  const sshd = await startSshd();
  const wrapper = path.join(sshd.dir, 'ssh-wrapper');
  // libvirt's C client runs the ssh binary; point it at the harness's known_hosts.
  fs.writeFileSync(
    wrapper,
    `#!/bin/sh\nexec ssh -o UserKnownHostsFile=${sshd.knownHostsPath} -o StrictHostKeyChecking=yes "$@"\n`,
    { mode: 0o755 },
  );
  try {
    const cUri = `qemu+ssh://root@127.0.0.1:${sshd.port}/system?keyfile=${sshd.clientKeyPath}&command=${wrapper}&no_tty=1`;
    await rpcSection('ssh', sshd.uri('/system'), cUri, true);
  } finally {
    await sshd.stop();
  }

  if (!SKIP_UPLOAD) await uploadSection();

  console.log('\n== summary');
  for (const r of rows) console.log(r);
}

await main();
