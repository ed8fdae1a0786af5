// The CPU of the processes on a job's path, from /proc (clock ticks of 10 ms), and this
// process's write syscalls: what each round reports per job besides its timings.
import fs from 'node:fs';
import path from 'node:path';
import type { Sshd } from '../../test/harness/sshd.js';

export const TICK_US = 1e6 / 100;

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly comm: string;
  readonly ticks: number;
}

function procs(): Proc[] {
  const found: Proc[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid …; comm may hold spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const f = stat.slice(close + 2).split(' ');
    found.push({
      pid: Number(name),
      ppid: Number(f[1]),
      comm: stat.slice(stat.indexOf('(') + 1, close),
      ticks: Number(f[11]) + Number(f[12]), // utime + stime
    });
  }
  return found;
}

/** Processes by group name: each picks its own from the process table. */
export type Groups = Readonly<Record<string, (table: readonly Proc[]) => readonly Proc[]>>;

export function sampleTicks(groups: Groups): Record<string, number> {
  const table = procs();
  return Object.fromEntries(
    Object.entries(groups).map(([name, select]) => [
      name,
      select(table).reduce((sum, p) => sum + p.ticks, 0),
    ]),
  );
}

export function byComm(comm: string): (table: readonly Proc[]) => Proc[] {
  return (table) => table.filter((p) => p.comm === comm);
}

/** The harness sshd's sessions (its descendants; the listener itself idles). */
export function sessionsOf(sshd: Sshd): (table: readonly Proc[]) => Proc[] {
  const root = Number(fs.readFileSync(path.join(sshd.dir, 'sshd.pid'), 'utf8').trim());
  return (table) => {
    const out: Proc[] = [];
    const queue = [root];
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      for (const p of table) {
        if (p.ppid !== next) continue;
        out.push(p);
        queue.push(p.pid);
      }
    }
    return out;
  };
}

/** The machine's CPU ticks (all cores) and how many of them idled, from /proc/stat. */
export function machineTicks(): { idle: number; total: number } {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number); // user … steal
  const idle = (f[3] ?? 0) + (f[4] ?? 0); // idle + iowait
  return { idle, total: f.reduce((sum, t) => sum + t, 0) };
}

export function ownWrites(): number {
  const io = fs.readFileSync('/proc/self/io', 'utf8');
  return Number(/syscw: (\d+)/.exec(io)?.[1] ?? NaN);
}
