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
// 2. listByTag over N defined-only tagged domains, against `virsh list` plus `virsh metadata`
//    per domain (a process each, as a script would), and against one virsh process running
//    all of them (the strongest form of the reference).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { DomainDefineXMLFlags, DomainUndefineFlags } from '../../src/libvirt/protocol.gen.js';
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
import { startSshd } from '../../test/harness/sshd.js';
import { cClientUri, median } from '../lib/virsh-ssh.js';
import { testHost } from '../../test/harness/test-host.js';

const run = promisify(execFile);

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const ROUNDS = arg('rounds', 5);
const DOMAINS = arg('domains', 300);
const SKIP_LIST = process.argv.includes('--skip-list');

const summary: string[] = [];
function report(what: string, ours: number, ref: number, refName: string, target: number): void {
  const ratio = ours / ref;
  const line =
    `${what.padEnd(30)} ours ${ours.toFixed(0).padStart(6)} ms   ${refName} ${ref.toFixed(0).padStart(6)} ms   ` +
    `ratio ${ratio.toFixed(3)}x (target <= ${target}x: ${ratio <= target ? 'met' : 'MISSED'})`;
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
  const provider = new Provider(config);
  const made: string[] = [];
  let baseVolume = '';
  try {
    // The image is cached before anything is timed: both sides start from the same base.
    const base = await ensureBaseImage(provider.ctx, 'h1', 'tiny', {});
    baseVolume = base.volumeName;
    console.log(
      `bench/provider: ${os.cpus().length} cores, over ssh to 127.0.0.1:${sshd.port}, median of ${ROUNDS}`,
    );

    // ---- create ---------------------------------------------------------------------------
    const virshCreate = async (name: string, oneProcess: boolean): Promise<void> => {
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
        `start ${name}`,
      ];
      if (oneProcess) await run('virsh', ['-q', '-c', cUri, commands.join(' ; ')]);
      else for (const c of commands) await run('virsh', ['-q', '-c', cUri, ...c.split(' ')]);
    };
    const oursWarm: number[] = [];
    const oursCold: number[] = [];
    const theirs: number[] = [];
    const theirsOne: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const v = `kvm2-bench-v${i}`;
      const o = `kvm2-bench-o${i}`;
      const w = `kvm2-bench-w${i}`;
      const c = `kvm2-bench-c${i}`;
      made.push(v, o, w, c);
      // Each guest is deleted before the next measurement: a running TCG guest busy in its
      // firmware would slow whatever is measured after it.
      const measure = async (into: number[], name: string, fn: () => Promise<unknown>) => {
        into.push(await timeIt(fn));
        await provider.delete(`h1/${name}`);
      };
      const fresh = new Provider(config);
      const steps = [
        () => measure(theirs, v, () => virshCreate(v, false)),
        () => measure(theirsOne, o, () => virshCreate(o, true)),
        async () => {
          await provider.get('h1/none').catch(() => undefined); // the shared connection is up
          await measure(oursWarm, w, () =>
            provider.create({ host: 'h1', name: w, uid: newUid(), image: 'tiny' }),
          );
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
    report('create (warm connection)', median(oursWarm), median(theirs), 'virsh per command', 0.5);
    report(
      'create (cold, dial included)',
      median(oursCold),
      median(theirs),
      'virsh per command',
      0.5,
    );
    report(
      'create (warm connection)',
      median(oursWarm),
      median(theirsOne),
      'one virsh process',
      0.5,
    );
    report(
      'create (cold, dial included)',
      median(oursCold),
      median(theirsOne),
      'one virsh process',
      0.5,
    );

    // ---- listByTag ------------------------------------------------------------------------
    if (!SKIP_LIST) await listSection(provider, sshd.uri('/system'), virsh, cUri);
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

async function listSection(
  provider: Provider,
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
    const perProcess: number[] = [];
    const oneProcess: number[] = [];
    for (let i = 0; i < Math.min(ROUNDS, 3); i++) {
      ours.push(await timeIt(() => provider.listByTag('bench-list')));
      perProcess.push(
        await timeIt(async () => {
          const { stdout } = await virsh(['list', '--all', '--name']);
          const names = stdout
            .split('\n')
            .map((s) => s.trim())
            .filter(Boolean);
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
      oneProcess.push(
        await timeIt(async () => {
          const { stdout } = await virsh(['list', '--all', '--name']);
          const names = stdout
            .split('\n')
            .map((s) => s.trim())
            .filter(Boolean);
          const script = names.map((n) => `metadata ${n} --uri ${KVM2_XMLNS}`).join(' ; ');
          await run('virsh', ['-q', '-c', cUri, script], { maxBuffer: 64 << 20 }).catch(
            () => undefined,
          );
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
      0.1,
    );
  } finally {
    await Promise.all(
      doms.map((dom) => conn.call(DomainUndefineFlags, { dom, flags: 0 }).catch(() => undefined)),
    );
    await conn.close();
  }
}

await main();
