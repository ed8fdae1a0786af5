// A real `kvm2 worker` process for the queue tests: the compiled CLI (test/harness/build.ts) with
// a config file, its JSON log lines collected, ready when it logs "worker ready" (with its
// endpoints' URL).
import { spawn, type ChildProcess } from 'node:child_process';
import { built, ROOT } from './build.js';

const CLI = built('cli/main.ts');

export interface LogLine {
  readonly msg?: string;
  readonly level?: number;
  readonly [key: string]: unknown;
}

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** `http://127.0.0.1:PORT` of /healthz, /readyz, /metrics. */
  readonly endpoints: string;
  readonly logs: LogLine[];
  /** Everything written to stderr. */
  stderr(): string;
  /** Resolves with the first log line (already seen or to come) that `match` accepts. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves when the process has exited: its code or signal and how long after `since`. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartWorkerOptions {
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly readyTimeoutMs?: number;
  /** The log line that makes the process "started" (default: `worker ready`). */
  readonly readyMatch?: (line: LogLine) => boolean;
}

export async function startWorkerProcess(
  configPath: string,
  options: StartWorkerOptions = {},
): Promise<WorkerProcess> {
  const child = spawn(
    process.execPath,
    [CLI, 'worker', '--config', configPath, ...(options.args ?? [])],
    {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'debug', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const logs: LogLine[] = [];
  const waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  let stderr = '';
  let partial = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const text of lines) {
      if (text.trim() === '') continue;
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        line = { msg: text };
      }
      logs.push(line);
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>(
    (resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
    },
  );

  const waitForLog = (match: (l: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> => {
    const seen = logs.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `worker ${child.pid}: no matching log line within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}; last logs: ${JSON.stringify(logs.slice(-5))}`,
          ),
        );
      }, timeoutMs);
      waiters.push({
        match,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(
          new Error(
            `worker ${child.pid} exited (${code ?? signal}) before the log line; stderr: ${stderr.slice(-2000)}`,
          ),
        );
      });
    });
  };

  const ready = await waitForLog(
    options.readyMatch ?? ((l) => l.msg === 'worker ready'),
    options.readyTimeoutMs ?? 60_000,
  );
  const stop = async (graceMs = 20_000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    child,
    pid: child.pid ?? 0,
    endpoints: String(ready['endpoints']),
    logs,
    stderr: () => stderr,
    waitForLog,
    exited,
    kill: (signal = 'SIGTERM') => child.kill(signal),
    stop,
  };
}
