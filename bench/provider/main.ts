// bench/provider: kvm2's provider against virsh, the same work against the same host over the
// same sshd, in one run.
//
//   npm run bench:provider [-- --rounds 5 --domains 300]
//
// 1. create with a cached image, against the equivalent virsh sequence (overlay from the
//    backing store, seed volume and upload, define, start) run as a script would (a virsh
//    process, so an SSH login, per command) and in ONE virsh process (the strongest form).
//    Ours is measured warm (the worker's shared connection is already up) and cold (a new
//    Provider: dial included).
// 2. connect over SSH (dial, libvirt's open, one call, close), against `virsh version` over the
//    same sshd (what each virsh command of a script pays), in interleaved rounds.
// 3. listByTag over N defined-only tagged domains, against `virsh list` plus `virsh metadata`
//    per domain (a process each, as a script would), and against one virsh process running
//    all of them (the strongest form of the reference). Ours is timed as kvm2 runs by
//    default, without tracing; the same listing with every call's span recorded is printed
//    beside it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import {
  ConnectGetLibVersion,
  DomainCreateWithFlags,
  DomainDefineXMLFlags,
  DomainLookupByName,
  DomainUndefineFlags,
} from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid } from '../../src/provider/core/ids.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { Provider } from '../../src/provider/provider.js';
import { buildSeed } from '../../src/provider/seed/seed.js';
import { buildDomainXml } from '../../src/provider/xml/domain.js';
import { KVM2_XMLNS, buildMetadata } from '../../src/provider/xml/metadata.js';
import { startImageServer } from '../../test/harness/image-server.js';
import { isolatedNetwork } from '../../test/harness/libvirt-objects.js';
import { startSshd, type Sshd } from '../../test/harness/sshd.js';
import { byComm, sampleTicks, sessionsOf } from '../queue/proc-cpu.js';
import { cClientUri, median } from '../lib/virsh-ssh.js';
import { testHost } from '../../test/harness/test-host.js';
import { memoryTracing } from '../../test/harness/telemetry.js';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';

const run = promisify(execFile);

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const ROUNDS = arg('rounds', 5);
const DOMAINS = arg('domains', 300);
const SKIP_LIST = process.argv.includes('--skip-list');
/** The pause after each guest's deletion, before the next step of a round (ms). */
const SETTLE_MS = arg('settle', 300);

const summary: string[] = [];
function report(what: string, ours: number, ref: number, refName: string, target: number): void {
  const ratio = ours / ref;
  const line =
    `${what.padEnd(30)} ours ${ours.toFixed(0).padStart(6)} ms   ${refName} ${ref.toFixed(0).padStart(6)} ms   ` +
    `ratio ${ratio.toFixed(3)}x (target <= ${target}x: ${ratio <= target ? 'met' : 'MISSED'})`;
  summary.push(line);
  console.log(line);
}

/** A row with a target of its own kind: `met` decides, `text` says what was measured. */
function row(what: string, text: string, target: string, met: boolean): void {
  const line = `${what.padEnd(30)} ${text}   (target ${target}: ${met ? 'met' : 'MISSED'})`;
  summary.push(line);
  console.log(line);
}

async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-bench-provider-'));
  const sshd = await startSshd();
  const images = await startImageServer();
  const net = await isolatedNetwork('kvm2-bpnet');
  const cUri = cClientUri(sshd);
  const virsh = (args: string[]): Promise<{ stdout: string }> =>
    run('virsh', ['-q', '-c', cUri, ...args], { maxBuffer: 64 << 20 });
  const imageFile = path.join(dir, 'tiny.qcow2');
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', imageFile, '64M']);
  images.serve('/tiny.qcow2', { file: imageFile });
  const configInput = {
    hosts: [testHost(sshd, net.name)],
    images: { tiny: { url: images.url('/tiny.qcow2'), format: 'qcow2' } },
    defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
  };
  const config = parseConfig(configInput);
  // An upload's span is its opening call; the bytes and the daemon's finish come after it.
  // Each upload is timed whole here too (open to finish), so the listing shows where they end.
  const uploads: { start: number; end: number }[] = [];
  const upload = Reflect.get(LibvirtConnection.prototype, 'upload') as (
    this: LibvirtConnection,
    ...args: unknown[]
  ) => Promise<void>;
  LibvirtConnection.prototype.upload = async function (
    this: LibvirtConnection,
    ...args: unknown[]
  ) {
    const start = performance.timeOrigin + performance.now();
    try {
      return await upload.apply(this, args);
    } finally {
      uploads.push({ start, end: performance.timeOrigin + performance.now() });
    }
  } as LibvirtConnection['upload'];
  // Every RPC is a span (kvm2.<procedure>): the create's calls are listed from them.
  const tracing = memoryTracing('bench-provider');
  const provider = new Provider(config, { tracer: tracing.tracer });
  const made: string[] = [];
  let baseVolume = '';
  try {
    // The image is cached before anything is timed: both sides start from the same base.
    const base = await ensureBaseImage(provider.ctx, 'h1', 'tiny', {});
    baseVolume = base.volumeName;
    console.log(
      `bench/provider: ${os.cpus().length} cores, over ssh to 127.0.0.1:${sshd.port}, median of ${ROUNDS}`,
    );

    // ---- connect ----------------------------------------------------------------------------
    await connectSection(sshd, cUri);

    // ---- create ---------------------------------------------------------------------------
    const virshCreate = async (name: string, oneProcess: boolean, start = true): Promise<void> => {
      const uid = newUid();
      const seed = buildSeed({ uid, name, userData: '#cloud-config\n' });
      const seedFile = path.join(dir, `${name}-seed.iso`);
      fs.writeFileSync(seedFile, seed);
      const pool = '/var/lib/libvirt/images';
      const xmlFile = path.join(dir, `${name}.xml`);
      fs.writeFileSync(
        xmlFile,
        buildDomainXml({
          name,
          vcpus: 1,
          memoryMiB: 128,
          domainType: 'qemu',
          firmware: 'uefi',
          overlayPath: `${pool}/kvm2-${name}.qcow2`,
          seedPath: `${pool}/kvm2-${name}-seed.iso`,
          network: { network: net.name },
          serialLogPath: `/var/log/libvirt/qemu/${name}-serial.log`,
          metadata: { uid, createdAt: new Date().toISOString(), tag: 'bench', image: 'tiny' },
        }),
      );
      const commands = [
        `vol-create-as default kvm2-${name}.qcow2 1G --format qcow2 --backing-vol ${base.path} --backing-vol-format ${base.format}`,
        `vol-create-as default kvm2-${name}-seed.iso ${seed.length} --format raw`,
        `vol-upload --pool default kvm2-${name}-seed.iso ${seedFile}`,
        `define ${xmlFile}`,
        ...(start ? [`start ${name}`] : []),
      ];
      if (oneProcess) await run('virsh', ['-q', '-c', cUri, commands.join(' ; ')]);
      else for (const c of commands) await run('virsh', ['-q', '-c', cUri, ...c.split(' ')]);
    };
    const oursWarm: number[] = [];
    const oursCold: number[] = [];
    const theirs: number[] = [];
    const theirsOne: number[] = [];
    const bareStart: number[] = [];
    let rpcs: RpcList = { calls: [], startMs: NaN, beforeStart: NaN, afterStart: NaN };
    /** Each warm create's own DomainCreateWithFlags, from its span: the start inside it. */
    const oursStart: number[] = [];
    const direct = await LibvirtConnection.connect(parseLibvirtUri(sshd.uri('/system')), {
      host: 'h1',
    });
    // Each guest is deleted before the next measurement: a running TCG guest busy in its
    // firmware would slow whatever is measured after it. The host is then left to settle
    // (the qemu process's exit, libvirt's cleanup after it) before the next step.
    const remove = async (name: string): Promise<void> => {
      await provider.delete(`h1/${name}`);
      await sleep(SETTLE_MS);
    };
    // One create of each kind first, untimed: our process's first create runs code never run
    // before (the seed's and the XML's builders compiled, the first define checked against
    // libvirt's schema, docs/domain-xml.md), and each side's first one warms the host alike.
    made.push('kvm2-bench-warm-ours', 'kvm2-bench-warm-virsh');
    await provider.create({
      host: 'h1',
      name: 'kvm2-bench-warm-ours',
      uid: newUid(),
      image: 'tiny',
    });
    await remove('kvm2-bench-warm-ours');
    await virshCreate('kvm2-bench-warm-virsh', true);
    await remove('kvm2-bench-warm-virsh');
    for (let i = 0; i < ROUNDS; i++) {
      const v = `kvm2-bench-v${i}`;
      const o = `kvm2-bench-o${i}`;
      const w = `kvm2-bench-w${i}`;
      const c = `kvm2-bench-c${i}`;
      const b = `kvm2-bench-b${i}`;
      made.push(v, o, w, c, b);
      const measure = async (into: number[], name: string, fn: () => Promise<unknown>) => {
        into.push(await timeIt(fn));
        await remove(name);
      };
      const fresh = new Provider(config);
      const steps = [
        () => measure(theirs, v, () => virshCreate(v, false)),
        () => measure(theirsOne, o, () => virshCreate(o, true)),
        async () => {
          await provider.get('h1/none').catch(() => undefined); // the shared connection is up
          tracing.exporter.reset();
          uploads.length = 0;
          oursWarm.push(
            await timeIt(() =>
              provider.create({ host: 'h1', name: w, uid: newUid(), image: 'tiny' }),
            ),
          );
          rpcs = rpcList(tracing.exporter.getFinishedSpans(), uploads);
          oursStart.push(rpcs.startMs);
          await remove(w);
        },
        async () => {
          // The floor: the first start of a domain just defined with fresh volumes (made by
          // the virsh sequence without its start, untimed), one RPC on a warm connection.
          await virshCreate(b, true, false);
          const { dom } = await direct.call(DomainLookupByName, { name: b });
          bareStart.push(await timeIt(() => direct.call(DomainCreateWithFlags, { dom, flags: 0 })));
          await remove(b);
        },
        () =>
          measure(oursCold, c, () =>
            fresh.create({ host: 'h1', name: c, uid: newUid(), image: 'tiny' }),
          ),
      ];
      // Alternate the order between rounds, so neither side always goes first.
      for (const step of i % 2 === 0 ? steps : [...steps].reverse()) await step();
      await fresh.close();
    }
    await direct.close();
    report('create (warm connection)', median(oursWarm), median(theirs), 'virsh per command', 0.5);
    report(
      'create (warm connection)',
      median(oursWarm),
      median(theirsOne),
      'one virsh process',
      0.6,
    );
    report(
      'create (cold, dial included)',
      median(oursCold),
      median(theirsOne),
      'one virsh process',
      0.6,
    );
    // A domain's start swings by ±100 ms from round to round here (qemu launching under TCG on
    // a shared machine), so the difference of two medians of separate starts is mostly noise.
    // What kvm2 adds is read inside each create: its whole time less its own start call. The
    // bare starts say whether that start is the same floor (same domain, same disks).
    const around = oursWarm.map((t, i) => t - (oursStart[i] ?? NaN));
    const over = median(around);
    row(
      'create over its own start',
      `ours ${median(oursWarm).toFixed(0)} ms (${oursWarm.map((x) => x.toFixed(0)).join('/')}), ` +
        `of which DomainCreateWithFlags ${oursStart.map((x) => x.toFixed(0)).join('/')}: ` +
        `over it ${around.map((x) => x.toFixed(0)).join('/')}, median ${over.toFixed(0)} ms`,
      '<= 40 ms',
      over <= 40,
    );
    const floor =
      `${'the start, ours vs bare'.padEnd(30)} kvm2's DomainCreateWithFlags ` +
      `${median(oursStart).toFixed(0)} ms, first start of a just-defined domain ` +
      `${median(bareStart).toFixed(0)} ms (${bareStart.map((x) => x.toFixed(0)).join('/')}); ` +
      `create less the bare start's median ${(median(oursWarm) - median(bareStart)).toFixed(0)} ms`;
    summary.push(floor);
    console.log(floor);
    // The start is in both sides' creates, so it bounds the ratio from below: with qemu slow to
    // launch (TCG on a busy machine) no create can read under start ÷ virsh's whole create.
    const lowest = median(bareStart) / median(theirsOne);
    const bound =
      `${'the ratio a start allows'.padEnd(30)} the bare start alone is ${lowest.toFixed(3)}x of ` +
      `one virsh process's create (${median(bareStart).toFixed(0)} / ${median(theirsOne).toFixed(0)} ms)` +
      `: the <= 0.6x target is ${lowest <= 0.6 ? 'above' : 'BELOW'} that floor on this run; ` +
      `ours is ${(median(oursWarm) / median(theirsOne)).toFixed(3)}x`;
    summary.push(bound);
    console.log(bound);
    console.log(`\nthe RPCs of one warm create (${rpcs.calls.length}), start offset and duration:`);
    for (const line of rpcs.calls) console.log(`  ${line}`);
    console.log(
      `kvm2's own time around the start in that create: ${rpcs.beforeStart.toFixed(1)} ms before ` +
        `DomainCreateWithFlags, ${rpcs.afterStart.toFixed(1)} ms after it`,
    );

    // ---- listByTag ------------------------------------------------------------------------
    if (!SKIP_LIST) {
      // Timed as kvm2 runs by default, with no tracing configured (workers/telemetry.ts); the
      // traced provider above (an SDK tracer recording every call's span) is printed beside.
      const plain = new Provider(config);
      try {
        await listSection({ plain, traced: provider }, sshd, sshd.uri('/system'), virsh, cUri);
      } finally {
        await plain.close();
      }
    }
  } finally {
    for (const n of made) await provider.delete(`h1/${n}`).catch(() => undefined);
    if (baseVolume !== '') {
      await run('virsh', ['-q', 'vol-delete', '--pool', 'default', baseVolume]).catch(
        () => undefined,
      );
      await run('virsh', ['-q', 'vol-delete', '--pool', 'default', `${baseVolume}.sha256`]).catch(
        () => undefined,
      );
    }
    await provider.close();
    await net.remove();
    await images.close();
    await sshd.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log('\n== summary');
  for (const line of summary) console.log(line);
}

/**
 * A connection from nothing: ours dials, opens, makes one call and closes, in this process;
 * virsh's is a process that does the same (`virsh version`), as each command of a script pays.
 * virsh on the local UNIX socket is printed beside: its process's own start, without SSH. A
 * dial of ours 35 ms over the fastest is counted as held: a write of sshd's waiting for a delayed
 * ACK (src/libvirt/transport/ssh.ts, ackWhileForwarding).
 */
async function connectSection(sshd: Sshd, cUri: string): Promise<void> {
  const uri = parseLibvirtUri(sshd.uri('/system'));
  const ours: number[] = [];
  const theirs: number[] = [];
  const local: number[] = [];
  const rounds = Math.max(12, ROUNDS);
  for (let i = 0; i < rounds; i++) {
    const steps = [
      async () =>
        ours.push(
          await timeIt(async () => {
            const conn = await LibvirtConnection.connect(uri, { host: 'h1' });
            await conn.call(ConnectGetLibVersion, undefined);
            await conn.close();
          }),
        ),
      async () => theirs.push(await timeIt(() => run('virsh', ['-q', '-c', cUri, 'version']))),
      async () =>
        local.push(await timeIt(() => run('virsh', ['-q', '-c', 'qemu:///system', 'version']))),
    ];
    for (const step of i % 2 === 0 ? steps : [...steps].reverse()) await step();
  }
  report('connect, one call, close', median(ours), median(theirs), 'virsh version over ssh', 0.5);
  const fastest = Math.min(...ours);
  const detail =
    `${'connect rounds'.padEnd(30)} ours ${ours.map((x) => x.toFixed(0)).join('/')} ms ` +
    `(${ours.filter((x) => x >= fastest + 35).length} of ${ours.length} held 35 ms or more); ` +
    `virsh over ssh ${theirs.map((x) => x.toFixed(0)).join('/')}; ` +
    `virsh on the local socket (its own start) median ${median(local).toFixed(0)} ms`;
  summary.push(detail);
  console.log(detail);
}

async function listSection(
  { plain: provider, traced }: { plain: Provider; traced: Provider },
  sshd: Sshd,
  uri: string,
  virsh: (args: string[]) => Promise<{ stdout: string }>,
  cUri: string,
): Promise<void> {
  console.log(`\ndefining ${DOMAINS} tagged domains (defined only, never started)...`);
  const conn = await LibvirtConnection.connect(parseLibvirtUri(uri), {
    host: 'h1',
  });
  const doms = await Promise.all(
    Array.from({ length: DOMAINS }, async (_, i) => {
      const name = `kvm2-bench-l${i}`;
      const xml = `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory><os><type arch='x86_64'>hvm</type></os><metadata>${buildMetadata({ uid: newUid(), createdAt: new Date().toISOString(), tag: 'bench-list', image: 'tiny' }, { namespaced: true })}</metadata></domain>`;
      return (await conn.call(DomainDefineXMLFlags, { xml, flags: 0 })).dom;
    }),
  );
  try {
    const listed = await provider.listByTag('bench-list');
    if (listed.length !== DOMAINS)
      throw new Error(`listByTag found ${listed.length}, not ${DOMAINS}`);
    const ours: number[] = [];
    // Where a listing's time goes: the CPU each process on its path spent in it (/proc ticks
    // of 10 ms for the daemon and the sshd session, cpuUsage for ours).
    const cpu: string[] = [];
    const cpuGroups = { libvirtd: byComm('libvirtd'), sshd: sessionsOf(sshd) };
    /** Every domain's name, as `virsh list` gives them: the reference's first step. */
    const domainNames = async (): Promise<string[]> =>
      (await virsh(['list', '--all', '--name'])).stdout
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean);
    const perProcess: number[] = [];
    const oneProcess: number[] = [];
    const tracedRounds: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Interleaved: ours first in even rounds, the one-process virsh first in odd ones.
      const oursRound = async (): Promise<void> => {
        const ticks = sampleTicks(cpuGroups);
        const own = process.cpuUsage();
        ours.push(await timeIt(() => provider.listByTag('bench-list')));
        const after = sampleTicks(cpuGroups);
        const used = process.cpuUsage(own);
        cpu.push(
          `libvirtd ${((after['libvirtd'] ?? 0) - (ticks['libvirtd'] ?? 0)) * 10} ms, ` +
            `sshd ${((after['sshd'] ?? 0) - (ticks['sshd'] ?? 0)) * 10} ms, ` +
            `ours ${((used.user + used.system) / 1000).toFixed(0)} ms`,
        );
        tracedRounds.push(await timeIt(() => traced.listByTag('bench-list')));
      };
      const virshRound = async (): Promise<void> => {
        oneProcess.push(
          await timeIt(async () => {
            const names = await domainNames();
            const script = names.map((n) => `metadata ${n} --uri ${KVM2_XMLNS}`).join(' ; ');
            await run('virsh', ['-q', '-c', cUri, script], { maxBuffer: 64 << 20 }).catch(
              () => undefined,
            );
          }),
        );
      };
      for (const step of i % 2 === 0 ? [oursRound, virshRound] : [virshRound, oursRound]) {
        await step();
      }
      // A process (and SSH login) per domain takes over a minute a round: once, for context.
      if (i > 0) continue;
      perProcess.push(
        await timeIt(async () => {
          const names = await domainNames();
          // A few at a time, as xargs -P would: still one process (and SSH login) each.
          for (let k = 0; k < names.length; k += 4) {
            await Promise.all(
              names
                .slice(k, k + 4)
                .map((n) => virsh(['metadata', n, '--uri', KVM2_XMLNS]).catch(() => undefined)),
            );
          }
        }),
      );
    }
    report(
      `listByTag ${DOMAINS} (virsh per domain)`,
      median(ours),
      median(perProcess),
      'virsh list + metadata x N',
      0.1,
    );
    report(
      `listByTag ${DOMAINS} (one virsh)`,
      median(ours),
      median(oneProcess),
      'one virsh, N commands',
      0.05,
    );
    console.log(
      `listByTag rounds: ours ${ours.map((x) => x.toFixed(0)).join('/')} ms, one virsh ${oneProcess.map((x) => x.toFixed(0)).join('/')} ms`,
    );
    console.log(`listByTag CPU per round of ours: ${cpu.join('; ')}`);
    console.log(
      `listByTag with every call's span recorded (an SDK tracer, in memory): ` +
        `${median(tracedRounds).toFixed(0)} ms (${tracedRounds.map((x) => x.toFixed(0)).join('/')})`,
    );
  } finally {
    await Promise.all(
      doms.map((dom) => conn.call(DomainUndefineFlags, { dom, flags: 0 }).catch(() => undefined)),
    );
    await conn.close();
  }
}

await main();

interface RpcList {
  readonly calls: string[];
  /** The start call's own duration. */
  readonly startMs: number;
  /** From the first call to the start's call, and from the start's reply to the last reply. */
  readonly beforeStart: number;
  readonly afterStart: number;
}

/**
 * The RPC spans of one create, and its uploads whole, in order: name, start offset from the
 * first, duration.
 */
function rpcList(
  spans: readonly ReadableSpan[],
  uploads: readonly { start: number; end: number }[],
): RpcList {
  const calls = spans
    .filter((sp) => /^kvm2\.[A-Z]/.test(sp.name))
    .map((sp) => ({
      name: sp.name.slice(5),
      start: hrMs(sp.startTime),
      end: hrMs(sp.endTime),
    }))
    .concat(uploads.map((u) => ({ name: '(upload, open to finish)', ...u })))
    .sort((a, b) => a.start - b.start);
  const t0 = calls[0]?.start ?? 0;
  const start = calls.find((c) => c.name === 'DomainCreateWithFlags');
  const last = Math.max(...calls.map((c) => c.end));
  return {
    calls: calls.map(
      (c) =>
        `${c.name.padEnd(28)} +${(c.start - t0).toFixed(1).padStart(6)} ms  ${(c.end - c.start).toFixed(1).padStart(6)} ms`,
    ),
    startMs: start === undefined ? NaN : start.end - start.start,
    beforeStart: start === undefined ? NaN : start.start - t0,
    afterStart: start === undefined ? NaN : last - start.end,
  };
}

function hrMs([s, ns]: readonly [number, number]): number {
  return s * 1000 + ns / 1e6;
}
