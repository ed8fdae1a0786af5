// What the check() tests run against: a private sshd in front of the machine's libvirtd,
// contexts over hosts made up per test (closed when the file ends), telemetry kept in memory,
// and the faults a probe meets: a listener that never speaks, a proxy that swallows one reply.
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { expect } from 'vitest';
import { DEFAULT_SOCKET } from '../../src/libvirt/transport/uri.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { createContext, type ProviderContext } from '../../src/provider/core/host-context.js';
import { startSshd, type Sshd } from './sshd.js';
import { memoryLogger, memoryTracing } from './telemetry.js';

export type HostInput = Record<string, unknown> & { name: string; uri: string };

export interface CheckSetup {
  readonly sshd: Sshd;
  /** A temporary directory, removed by stop(). */
  readonly tmp: string;
}

export interface CheckRig {
  readonly exporter: InMemorySpanExporter;
  /** The contexts' log lines (level info and up), parsed. */
  readonly logLines: Record<string, unknown>[];
  /** Run in reverse by stop(), before the contexts close. */
  readonly cleanups: (() => Promise<unknown>)[];
  /** A context over these hosts; domain type qemu and a bridge unless a test says otherwise. */
  contextFor: (hosts: HostInput[], health?: Record<string, unknown>) => ProviderContext;
  /** An SSH URI to any loopback port, with the harness's key and known_hosts unless overridden. */
  sshUri: (port: number, params?: Record<string, string>) => string;
  expectSessionsGone: () => Promise<void>;
  /** A TCP listener that accepts and never says a word (not even an SSH banner). */
  silentListener: () => Promise<{ port: number; open: () => number; accepted: number[] }>;
  /**
   * A UNIX-socket proxy in front of libvirtd that passes everything except the replies to one
   * procedure, which it swallows: a daemon that answers the opening sequence and then stalls.
   */
  swallowingProxy: (proc: number) => Promise<{ socketPath: string; open: () => number }>;
  /** Sets the global context manager, starts sshd, makes the temporary directory. */
  start: () => Promise<CheckSetup>;
  /** Undoes start() and everything the tests made, the global context manager included. */
  stop: () => Promise<void>;
}

export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs = 3_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

export function checkRig(): CheckRig {
  const { exporter, tracerProvider, tracer } = memoryTracing('check-test');
  const contextManager = new AsyncLocalStorageContextManager();
  const { logger, lines: logLines } = memoryLogger('info');

  let sshd: Sshd | undefined;
  let tmp: string | undefined;
  const contexts: ProviderContext[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  const runningSshd = (): Sshd => {
    if (sshd === undefined) throw new Error('checkRig: start() first');
    return sshd;
  };

  function contextFor(hosts: HostInput[], health: Record<string, unknown> = {}): ProviderContext {
    const config = parseConfig({
      hosts: hosts.map((h) => ({
        pool: 'default',
        domainType: 'qemu',
        ...(h.network === undefined ? { bridge: 'br0' } : {}),
        ...h,
      })),
      health,
    });
    const ctx = createContext(config, { logger, tracer });
    contexts.push(ctx);
    return ctx;
  }

  function sshUri(port: number, params: Record<string, string> = {}): string {
    const query = new URLSearchParams({
      keyfile: runningSshd().clientKeyPath,
      known_hosts: runningSshd().knownHostsPath,
      ...params,
    });
    return `qemu+ssh://root@127.0.0.1:${port}/system?${query.toString()}`;
  }

  async function expectSessionsGone(): Promise<void> {
    expect(await eventually(async () => (await runningSshd().sessionCount()) === 0)).toBe(true);
  }

  async function silentListener(): Promise<{
    port: number;
    open: () => number;
    accepted: number[];
  }> {
    const sockets = new Set<net.Socket>();
    const accepted: number[] = [];
    const server = net.createServer((socket) => {
      accepted.push(performance.now());
      sockets.add(socket);
      // Reads and drops what the client says, so its FIN is seen and the socket closes.
      socket.resume();
      socket.on('close', () => sockets.delete(socket)).on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    });
    const address = server.address() as net.AddressInfo;
    return { port: address.port, open: () => sockets.size, accepted };
  }

  async function swallowingProxy(
    proc: number,
  ): Promise<{ socketPath: string; open: () => number }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-chk-proxy-'));
    const socketPath = path.join(dir, 'sock');
    const sockets = new Set<net.Socket>();
    const server = net.createServer((client) => {
      const daemon = net.connect(DEFAULT_SOCKET);
      sockets.add(client);
      let buffered = Buffer.alloc(0);
      client.on('data', (d: Buffer) => daemon.write(d));
      // Frames: length (4, itself included), program, version, procedure, … (RFC 4506 XDR).
      daemon.on('data', (d: Buffer) => {
        buffered = Buffer.concat([buffered, d]);
        while (buffered.length >= 16 && buffered.length >= buffered.readUInt32BE(0)) {
          const length = buffered.readUInt32BE(0);
          const frame = buffered.subarray(0, length);
          buffered = buffered.subarray(length);
          if (frame.readUInt32BE(12) !== proc && !client.destroyed) client.write(frame);
        }
      });
      const end = (): void => {
        sockets.delete(client);
        client.destroy();
        daemon.destroy();
      };
      client.on('close', end).on('error', end);
      daemon.on('close', end).on('error', end);
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    cleanups.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    });
    return { socketPath, open: () => sockets.size };
  }

  return {
    exporter,
    logLines,
    cleanups,
    contextFor,
    sshUri,
    expectSessionsGone,
    silentListener,
    swallowingProxy,
    async start() {
      context.setGlobalContextManager(contextManager.enable());
      sshd = await startSshd();
      tmp = await mkdtemp(path.join(os.tmpdir(), 'kvm2-chk-'));
      return { sshd, tmp };
    },
    async stop() {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      await Promise.all(contexts.map((c) => c.hosts.close()));
      await sshd?.stop();
      if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
      context.disable();
      await tracerProvider.shutdown();
    },
  };
}
