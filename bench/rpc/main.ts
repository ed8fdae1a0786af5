// bench/rpc: our libvirt client against libvirt's own C client (Debian's python3-libvirt, run
// with /usr/bin/python3) and virsh, the same work against the same daemon, in one run.
//
//   npm run bench:rpc [-- --calls 20000 --rounds 5 --upload-mib 1024 --skip-upload --only-upload]
//
// Rates are ConnectGetLibVersion round trips per second: the cheapest call there is, so the
// figure is per-call overhead (ours, the daemon's, the transport's). The daemon's ceiling is
// the combined rate of several C clients on connections of their own, started together; beside
// it, libvirt's C client with as many threads on one connection, as ours uses one. Every
// figure is the median of --rounds runs, ours and the reference interleaved, so a noisy
// neighbour hits both alike.
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { ConnectGetLibVersion } from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { startSshd } from '../../test/harness/sshd.js';
import { cClientUri, median } from '../lib/virsh-ssh.js';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const PY = '/usr/bin/python3';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const CALLS = arg('calls', 20_000);
const ROUNDS = arg('rounds', 5);
const UPLOAD_MIB = arg('upload-mib', 1024);
const SKIP_UPLOAD = process.argv.includes('--skip-upload');
const ONLY_UPLOAD = process.argv.includes('--only-upload');

/**
 * Median of each side over ROUNDS, the two measured alternately, and which one goes first
 * swapped each round: whatever one run leaves behind (the pool disk's writeback after an
 * upload, a warm cache) falls on each side alike. `rounds` has each round's pair.
 */
async function sideBySide(
  oursRun: () => Promise<number>,
  refRun: () => Promise<number>,
): Promise<{ ours: number; ref: number; rounds: { ours: number; ref: number }[] }> {
  const rounds: { ours: number; ref: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      const ref = await refRun();
      rounds.push({ ref, ours: await oursRun() });
    } else {
      const ours = await oursRun();
      rounds.push({ ours, ref: await refRun() });
    }
  }
  return {
    ours: median(rounds.map((r) => r.ours)),
    ref: median(rounds.map((r) => r.ref)),
    rounds,
  };
}

interface CRun {
  calls: number;
  rate: number;
  start: number;
  end: number;
}

async function cRun(uri: string, calls: number, threads: number, startAt = 0): Promise<CRun> {
  const { stdout } = await run(PY, [
    path.join(here, 'c_client.py'),
    uri,
    String(calls),
    String(threads),
    String(startAt),
  ]);
  return JSON.parse(stdout) as CRun;
}

async function cClient(uri: string, calls: number, threads: number): Promise<number> {
  return (await cRun(uri, calls, threads)).rate;
}

/**
 * Several C clients, each sequential on its own connection, started together (they wait for
 * a common instant after connecting): total calls over the common wall time. (A sum of each
 * process's own rate would overstate it: a process that runs on after the others finished
 * has the daemon to itself.)
 */
async function cCeiling(uri: string, processes: number): Promise<number> {
  const startAt = Date.now() / 1000 + 1.5; // python start-up and connect come before it
  const runs = await Promise.all(
    Array.from({ length: processes }, () => cRun(uri, Math.floor(CALLS / processes), 1, startAt)),
  );
  const total = runs.reduce((s, r) => s + r.calls, 0);
  const wall = Math.max(...runs.map((r) => r.end)) - Math.min(...runs.map((r) => r.start));
  return total / wall;
}

async function ours(conn: LibvirtConnection, inFlight: number): Promise<number> {
  for (let i = 0; i < 200; i++) await conn.call(ConnectGetLibVersion, undefined);
  const per = Math.floor(CALLS / inFlight);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = 0; i < per; i++) await conn.call(ConnectGetLibVersion, undefined);
    }),
  );
  return (per * inFlight) / ((performance.now() - t0) / 1000);
}

const summary: string[] = [];
function report(what: string, o: string, ref: string, ratio: number, target: number): void {
  const line =
    `${what.padEnd(28)} ours ${o.padStart(22)}   ${ref.padStart(40)}   ` +
    `ratio ${ratio.toFixed(2)}x (target >= ${target}x: ${ratio >= target ? 'met' : 'MISSED'})`;
  summary.push(line);
  console.log(line);
}
const perSec = (n: number): string => `${n.toFixed(0)} calls/s`;

async function rpcSection(
  label: string,
  ourUri: string,
  cUri: string,
  ssh: boolean,
): Promise<void> {
  console.log(`\n== ${label}: ${CALLS} calls per run, median of ${ROUNDS}`);
  const conn = await LibvirtConnection.connect(parseLibvirtUri(ourUri), { host: 'bench' });
  try {
    const seq = await sideBySide(
      () => ours(conn, 1),
      () => cClient(cUri, CALLS, 1),
    );
    report(
      `${label} sequential`,
      perSec(seq.ours),
      `C client sequential ${perSec(seq.ref)}`,
      seq.ours / seq.ref,
      ssh ? 1.0 : 0.8,
    );
    for (const n of [8, 32]) {
      if (ssh) {
        const runs: number[] = [];
        for (let i = 0; i < ROUNDS; i++) runs.push(await ours(conn, n));
        const o = median(runs);
        report(
          `${label} ${n} in flight`,
          perSec(o),
          `C client sequential ${perSec(seq.ref)}`,
          o / seq.ref,
          2.0,
        );
        continue;
      }
      // The ceiling: the better of 4 and 8 C clients at once. Beside it, in the same rounds,
      // libvirt's C client with n threads on one connection, as ours is (SPEC §4: one shared
      // connection a host): what the daemon gives one connection, no target read.
      const oneConnection: number[] = [];
      const r = await sideBySide(
        () => ours(conn, n),
        async () => {
          oneConnection.push(await cClient(cUri, CALLS, n));
          return Math.max(await cCeiling(cUri, 4), await cCeiling(cUri, 8));
        },
      );
      report(
        `${label} ${n} in flight`,
        perSec(r.ours),
        `daemon ceiling ${perSec(r.ref)}`,
        r.ours / r.ref,
        n === 8 ? 1.0 : 0.9,
      );
      const c1 = median(oneConnection);
      const line =
        `${`${label} ${n} in flight`.padEnd(28)} context: libvirt's C client, ${n} threads on one ` +
        `connection, ${perSec(c1)}; ours ÷ it ${(r.ours / c1).toFixed(2)}x (no target)`;
      summary.push(line);
      console.log(line);
    }
  } finally {
    await conn.close();
  }
}

/**
 * Runs a command to its end; returns wall seconds, its stdout and the peak private memory
 * (RssAnon, MiB) of its process tree, sampled from /proc every 10 ms: the memory a process holds
 * for itself, without the executable's and libraries' file pages (which RSS counts whole,
 * though the page cache shares them between processes).
 */
async function timed(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ seconds: number; stdout: string; peakAnonMiB: number }> {
  const t0 = performance.now();
  const child = spawn(cmd, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  let peakAnonKiB = 0;
  const sample = setInterval(() => {
    if (child.pid !== undefined) peakAnonKiB = Math.max(peakAnonKiB, treeAnonKiB(child.pid));
  }, 10);
  try {
    await new Promise<void>((resolve, reject) =>
      child.on('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`)),
      ),
    );
  } finally {
    clearInterval(sample);
  }
  return { seconds: (performance.now() - t0) / 1000, stdout, peakAnonMiB: peakAnonKiB / 1024 };
}

/** RssAnon of a process and everything below it, KiB; a process gone meanwhile counts 0. */
function treeAnonKiB(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const own = Number(/RssAnon:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
    const children = fs
      .readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter((x) => x !== '')
      .map(Number);
    return own + children.reduce((sum, c) => sum + treeAnonKiB(c), 0);
  } catch {
    return 0;
  }
}

/** CPU seconds an upload cost each process on its path. */
interface UploadCpu {
  /** The client process (ours: node; the reference: virsh), user + system. */
  client: number;
  /**
   * libvirtd: its event loop, which reads the stream off the socket, and the thread that writes
   * the volume (libvirt 9.0 streams a regular file through a thread of its own, not an
   * iohelper process: the daemon's children's CPU stayed 0 across these uploads).
   */
  daemon: number;
}

/** libvirtd's CPU seconds so far, all its threads. */
function daemonCpu(): number {
  const pid = execFileSync('pgrep', ['-x', 'libvirtd']).toString().trim().split('\n')[0];
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // After "(comm) ": state ppid … utime (11) stime (12), in ticks of 10 ms.
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return ((f[11] ?? NaN) + (f[12] ?? NaN)) / 100;
}

/** Runs `upload`, a process /usr/bin/time writes "%M %U %S" of into `timeFile`. */
async function withCpu<T>(
  timeFile: string,
  upload: () => Promise<T>,
): Promise<T & { cpu: UploadCpu; peakRssKiB: number }> {
  const before = daemonCpu();
  const result = await upload();
  const after = daemonCpu();
  const [peak, user, system] = fs.readFileSync(timeFile, 'utf8').trim().split(/\s+/).map(Number);
  return {
    ...result,
    peakRssKiB: peak ?? NaN,
    cpu: {
      client: (user ?? NaN) + (system ?? NaN),
      daemon: after - before,
    },
  };
}

interface OursUpload {
  mibPerSec: number;
  /** The upload call alone, as the child times it. */
  transferMibPerSec: number;
  cpu: UploadCpu;
  /** Wall time of the process that was not the upload: node's start, loading, dial, exit. */
  outsideMs: number;
  peakAnonMiB: number;
  child: { peakRssMiB: number; rssBeforeMiB: number; rssStartMiB: number; rssLoadedMiB: number };
}

/**
 * Our side: the upload in a node process of its own on the compiled client, timed whole,
 * start to exit, as virsh is: node's start and the dial count too. The file is read as virsh
 * reads it (upload-child.mjs), or through fs.promises with `reader` 'promises'.
 */
async function oursUpload(
  dir: string,
  pool: string,
  vol: string,
  file: string,
  reader: 'sync' | 'promises' = 'sync',
) {
  const timeFile = path.join(dir, 'ours.time');
  const { seconds, stdout, peakAnonMiB, cpu } = await withCpu(timeFile, () =>
    timed(
      '/usr/bin/time',
      [
        '-f',
        '%M %U %S',
        '-o',
        timeFile,
        process.execPath,
        path.join(here, 'upload-child.mjs'),
        'qemu:///system',
        pool,
        vol,
        file,
      ],
      { READER: reader },
    ),
  );
  const child = JSON.parse(stdout) as OursUpload['child'] & { seconds: number };
  return {
    mibPerSec: UPLOAD_MIB / seconds,
    transferMibPerSec: UPLOAD_MIB / child.seconds,
    cpu,
    outsideMs: (seconds - child.seconds) * 1000,
    peakAnonMiB,
    child,
  } satisfies OursUpload;
}

async function virshUpload(dir: string, pool: string, vol: string, file: string) {
  const timeFile = path.join(dir, 'virsh.time');
  const { seconds, peakAnonMiB, cpu, peakRssKiB } = await withCpu(timeFile, () =>
    timed('/usr/bin/time', [
      '-f',
      '%M %U %S',
      '-o',
      timeFile,
      'virsh',
      '-q',
      'vol-upload',
      '--pool',
      pool,
      vol,
      file,
    ]),
  );
  return { mibPerSec: UPLOAD_MIB / seconds, peakAnonMiB, rssMiB: peakRssKiB / 1024, cpu };
}

const UPLOAD_VOLS = ['kvm2-bench-virsh.raw', 'kvm2-bench-ours.raw'] as const;

/**
 * Each side's volume, made and then written once untimed: the first write into a fresh volume
 * allocates its blocks and ran 2–4× slower than the next ones, on whichever side met it.
 */
async function prepareUploadVolumes(dir: string, pool: string, file: string): Promise<void> {
  for (const v of UPLOAD_VOLS) {
    await run('virsh', ['-q', 'vol-delete', '--pool', pool, v]).catch(() => undefined);
    await run('virsh', [
      '-q',
      'vol-create-as',
      pool,
      v,
      String(UPLOAD_MIB << 20),
      '--format',
      'raw',
    ]);
  }
  await oursUpload(dir, pool, UPLOAD_VOLS[1], file);
  await virshUpload(dir, pool, UPLOAD_VOLS[0], file);
}

/**
 * The same two uploads into a transient pool on tmpfs: with the disk out of the way, what is
 * left is the two clients and the daemon (its event loop and its file thread). Context for the
 * row above, which the pool's disk bounds.
 */
async function tmpfsUploads(dir: string, file: string): Promise<void> {
  const pool = `kvm2-bench-shm-${process.pid}`;
  const target = fs.mkdtempSync('/dev/shm/kvm2-bench-');
  await run('virsh', ['-q', 'pool-create-as', pool, 'dir', '--target', target]);
  try {
    await prepareUploadVolumes(dir, pool, file);
    const outside: number[] = [];
    const promises: number[] = [];
    const r = await sideBySide(
      async () => {
        // The same client fed through fs.promises, in the same slot: what the read costs.
        promises.push((await oursUpload(dir, pool, UPLOAD_VOLS[1], file, 'promises')).mibPerSec);
        const o = await oursUpload(dir, pool, UPLOAD_VOLS[1], file);
        outside.push(o.outsideMs);
        return o.mibPerSec;
      },
      async () => (await virshUpload(dir, pool, UPLOAD_VOLS[0], file)).mibPerSec,
    );
    // What our transfer itself runs at: the process's time less what was not the upload.
    const transfer = UPLOAD_MIB / (UPLOAD_MIB / r.ours - median(outside) / 1000);
    const line =
      `upload into a pool on tmpfs (the disk out of the way): ours ${r.ours.toFixed(0)} MiB/s ` +
      `(the transfer alone ~${transfer.toFixed(0)}), virsh ${r.ref.toFixed(0)} MiB/s: ` +
      `${(r.ours / r.ref).toFixed(2)}x (per round ` +
      r.rounds.map((x) => `${x.ours.toFixed(0)}/${x.ref.toFixed(0)}`).join(' ') +
      `; ours outside the upload ${median(outside).toFixed(0)} ms); ours reading through ` +
      `fs.promises ${median(promises).toFixed(0)} MiB/s (${promises.map((x) => x.toFixed(0)).join('/')})`;
    summary.push(line);
    console.log(line);
  } finally {
    await run('virsh', ['-q', 'pool-destroy', pool]).catch(() => undefined);
    fs.rmSync(target, { recursive: true, force: true });
  }
}

async function uploadSection(): Promise<void> {
  console.log(
    `\n== upload of a ${UPLOAD_MIB} MiB volume over the UNIX socket, median of ${ROUNDS}`,
  );
  // Our side runs in plain node on the compiled client: tsx alone holds ~45 MiB more.
  await run('npx', ['tsc', '-p', 'tsconfig.build.json']);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-bench-'));
  const file = path.join(dir, 'image.raw');
  try {
    await run('sh', ['-c', `head -c ${UPLOAD_MIB << 20} /dev/urandom > ${file}`]);
    await prepareUploadVolumes(dir, 'default', file);
    const rss: number[] = [];
    const before: number[] = [];
    const started: number[] = [];
    const anon: number[] = [];
    const virshAnon: number[] = [];
    const loaded: number[] = [];
    const virshRss: number[] = [];
    const outside: number[] = [];
    const transfer: number[] = [];
    const oursCpu: UploadCpu[] = [];
    const virshCpu: UploadCpu[] = [];
    const r = await sideBySide(
      async () => {
        const { mibPerSec, transferMibPerSec, outsideMs, peakAnonMiB, child, cpu } =
          await oursUpload(dir, 'default', UPLOAD_VOLS[1], file);
        rss.push(child.peakRssMiB);
        anon.push(peakAnonMiB);
        before.push(child.rssBeforeMiB);
        started.push(child.rssStartMiB);
        loaded.push(child.rssLoadedMiB);
        outside.push(outsideMs);
        transfer.push(transferMibPerSec);
        oursCpu.push(cpu);
        return mibPerSec;
      },
      async () => {
        const { mibPerSec, peakAnonMiB, rssMiB, cpu } = await virshUpload(
          dir,
          'default',
          UPLOAD_VOLS[0],
          file,
        );
        virshAnon.push(peakAnonMiB);
        virshRss.push(rssMiB);
        virshCpu.push(cpu);
        return mibPerSec;
      },
    );
    const peak = Math.max(...rss);
    report(
      `upload ${UPLOAD_MIB} MiB`,
      `${r.ours.toFixed(0)} MiB/s, RSS ${peak.toFixed(0)} MiB`,
      `virsh vol-upload ${r.ref.toFixed(0)} MiB/s, RSS ${Math.max(...virshRss).toFixed(0)} MiB`,
      r.ours / r.ref,
      1.0,
    );
    // Each round's pair (the disk under both is the noisiest part of this machine), and what
    // of our process's time is not the upload: node's start, the modules, the dial, the exit.
    const roundsLine =
      `upload per round (MiB/s, ours/virsh; the first to run alternates): ` +
      r.rounds.map((x) => `${x.ours.toFixed(0)}/${x.ref.toFixed(0)}`).join(' ') +
      `; ours outside the upload (start, load, dial, exit): ` +
      `${median(outside).toFixed(0)} ms (${outside.map((x) => x.toFixed(0)).join('/')})`;
    summary.push(roundsLine);
    console.log(roundsLine);
    // What the ratio would be without node's fixed cost: our upload call alone (as the child
    // times it) against virsh's whole process, start and dial included. No target is read.
    const transferLine =
      `upload, ours without node's start, load, dial and exit: ${median(transfer).toFixed(0)} ` +
      `MiB/s (${transfer.map((x) => x.toFixed(0)).join('/')}), ` +
      `${(median(transfer) / r.ref).toFixed(2)}x of virsh's whole process`;
    summary.push(transferLine);
    console.log(transferLine);
    // Where each side's time goes: the CPU seconds of each process on the path, against the
    // upload's wall time (the disk's own time is the dd line below).
    const cpuOf = (all: UploadCpu[], side: number): string => {
      const m = (k: keyof UploadCpu): string => median(all.map((c) => c[k])).toFixed(2);
      return `client ${m('client')} s, libvirtd ${m('daemon')} s in ${(UPLOAD_MIB / side).toFixed(2)} s`;
    };
    const cpuLine =
      `upload CPU (medians, seconds): ours ${cpuOf(oursCpu, r.ours)}; ` +
      `virsh ${cpuOf(virshCpu, r.ref)}`;
    summary.push(cpuLine);
    console.log(cpuLine);
    // The floor under both: the pool's disk taking the same bytes (dd, 256 KiB writes, fsync at
    // the end: the bytes on the disk, not only in the page cache).
    const disk: number[] = [];
    const ddTarget = path.join('/var/lib/libvirt/images', 'kvm2-bench-dd.raw');
    try {
      for (let i = 0; i < ROUNDS; i++) {
        const { seconds } = await timed('dd', [
          `if=${file}`,
          `of=${ddTarget}`,
          'bs=256K',
          'conv=fsync',
          'status=none',
        ]);
        disk.push(UPLOAD_MIB / seconds);
      }
    } finally {
      fs.rmSync(ddTarget, { force: true });
    }
    const diskLine =
      `upload's floor: dd of the same file into the pool's directory, fsync'd: ` +
      `${median(disk).toFixed(0)} MiB/s (${disk.map((x) => x.toFixed(0)).join('/')}); ` +
      `ours ${(r.ours / median(disk)).toFixed(2)}x of it, virsh ${(r.ref / median(disk)).toFixed(2)}x`;
    summary.push(diskLine);
    console.log(diskLine);
    // Where the memory is, stage by stage in the child (medians): node started with nothing of
    // ours, the client's modules loaded (with @opentelemetry/api and node:net), the connection
    // up and the volume found, and what the upload itself added on top.
    const bare = bareNodePeaks(dir);
    const rssLine =
      `upload peak RSS ${peak.toFixed(0)} MiB (target <= 48 MiB: ${peak <= 48 ? 'met' : 'MISSED'}): ` +
      `node ${process.version} started ${median(started).toFixed(1)} MiB ` +
      `(a bare \`node -e 0\` ${bare.eval.toFixed(1)}), + the client's modules ` +
      `${(median(loaded) - median(started)).toFixed(1)}, + connection and look-ups ` +
      `${(median(before) - median(loaded)).toFixed(1)}, + the upload ` +
      `${(median(rss) - median(before)).toFixed(1)} MiB`;
    summary.push(rssLine);
    console.log(rssLine);
    // The target against node itself, peaks measured as the upload's is (/usr/bin/time's %M):
    // what is left of 48 MiB once node has started, before any code of ours.
    const floorLine =
      `node's own peak RSS, measured as the upload's (/usr/bin/time %M, median of 5): ` +
      `\`node -e 0\` ${bare.eval.toFixed(1)} MiB, an empty ES module ${bare.module.toFixed(1)} MiB: ` +
      `${(48 - bare.module).toFixed(1)} MiB of the 48 left for the client, its connection and the upload`;
    summary.push(floorLine);
    console.log(floorLine);
    // RSS counts the executable's and libraries' pages, which node has ~37 MiB of; the memory
    // each side holds for itself is its anonymous part, sampled the same way for both.
    const anonLine =
      `upload peak private memory (RssAnon, process tree, sampled every 10 ms): ours ` +
      `${median(anon).toFixed(1)} MiB, virsh ${median(virshAnon).toFixed(1)} MiB (medians)`;
    summary.push(anonLine);
    console.log(anonLine);
    await tmpfsUploads(dir, file);
  } finally {
    for (const v of UPLOAD_VOLS) {
      await run('virsh', ['-q', 'vol-delete', '--pool', 'default', v]).catch(() => undefined);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { stdout: lib } = await run('virsh', ['-c', 'qemu:///system', 'version']);
  console.log(
    `bench/rpc: ${os.cpus().length} cores, node ${process.version}, ${lib
      .split('\n')
      .find((l) => l.includes('library'))
      ?.trim()}`,
  );
  if (!ONLY_UPLOAD) {
    await rpcSection('unix socket', 'qemu:///system', 'qemu:///system', false);
    const sshd = await startSshd();
    try {
      const cUri = cClientUri(sshd);
      await rpcSection('ssh', sshd.uri('/system'), cUri, true);
    } finally {
      await sshd.stop();
    }
  }
  if (!SKIP_UPLOAD) await uploadSection();
  console.log('\n== summary');
  for (const line of summary) console.log(line);
}

await main();

/** Peak RSS (MiB, median of 5) of node doing nothing, as /usr/bin/time measures the upload's. */
function bareNodePeaks(dir: string): { eval: number; module: number } {
  const empty = path.join(dir, 'empty.mjs');
  fs.writeFileSync(empty, '');
  const peak = (args: string[]): number => {
    const out = path.join(dir, 'bare.rss');
    const peaks = Array.from({ length: 5 }, () => {
      execFileSync('/usr/bin/time', ['-f', '%M', '-o', out, process.execPath, ...args]);
      return Number(fs.readFileSync(out, 'utf8').trim()) / 1024;
    });
    return median(peaks);
  };
  return { eval: peak(['-e', '0']), module: peak([empty]) };
}
