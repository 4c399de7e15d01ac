import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { runningPid } from '../../deploy/dev/processes';

// CPU seconds spent by the processes that matter during a measured run, read from /proc/<pid>/stat (utime + stime):
// so the tool's own process (the Keelson worker, the Skyhook operator) can be compared apart from what it leans on
// (Temporal, the kube-apiserver, etcd, ...). A process and all its descendants count as one role.

let ticksPerSecond: number | undefined;

/** USER_HZ: the unit of utime and stime (100 on every common Linux; asked once, in case it is not). */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

interface Stat {
  ppid: number;
  /** utime + stime, in clock ticks. */
  ticks: number;
}

/** /proc/<pid>/stat of one process, or undefined once it has gone. */
function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: the fields proper start after the last ')'.
  // From there: state(3) ppid(4) ... utime(14) stime(15), i.e. indices 1, 11 and 12 of what follows.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) };
}

/** Every process alive now. */
function allStats(): Map<number, Stat> {
  const all = new Map<number, Stat>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = readStat(Number(entry));
    if (s) all.set(Number(entry), s);
  }
  return all;
}

/** A process and every descendant of it that is alive now, with their tick counts. */
function treeTicks(all: Map<number, Stat>, root: number): Map<number, number> {
  const out = new Map<number, number>();
  const queue = all.has(root) ? [root] : [];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (out.has(pid)) continue;
    out.set(pid, all.get(pid)!.ticks);
    for (const [child, s] of all) if (s.ppid === pid) queue.push(child);
  }
  return out;
}

/**
 * Where a role's processes are now (a worker killed and started again has a new pid; undefined or none: not
 * running). A role of several processes (worker replicas) counts them all.
 */
export type PidSource = () => number | number[] | undefined;

/**
 * Counts each role's CPU seconds from `start()` to `stop()`. `sample()` (called every few seconds by the bench's
 * sampler) keeps the last reading of every pid, so a process that dies mid-run (a SIGKILLed worker) keeps what it
 * had spent; a pid first seen after the start began during the run and counts from zero. The bench's own process
 * is counted too, as role `bench` (its watches and recorders run on the same cores as the tools), by its own usage:
 * its process tree would hold the workers and servers it started.
 */
export class CpuMeter {
  /** role -> pid -> [ticks at first sight (0 if born during the run), ticks at the last sample]. */
  private readings = new Map<string, Map<number, [number, number]>>();
  private started = false;
  private benchAtStart = process.cpuUsage();
  private machineAtStart = machineTimes();
  /** The machine's busy share from start() to stop() (busyShare), everything on it included. */
  machineBusy = NaN;

  constructor(private readonly roles: Record<string, PidSource>) {}

  start(): void {
    this.started = false;
    this.readings.clear();
    this.sample();
    this.benchAtStart = process.cpuUsage();
    this.machineAtStart = machineTimes();
    this.started = true;
  }

  sample(): void {
    const all = allStats();
    for (const [role, source] of Object.entries(this.roles)) {
      const pids = [source() ?? []].flat();
      if (pids.length === 0) continue;
      const byPid = this.readings.get(role) ?? new Map<number, [number, number]>();
      this.readings.set(role, byPid);
      for (const pid of pids) {
        for (const [p, ticks] of treeTicks(all, pid)) {
          const r = byPid.get(p);
          if (r) r[1] = ticks;
          else byPid.set(p, [this.started ? 0 : ticks, ticks]);
        }
      }
    }
  }

  /** Takes a last reading and returns CPU seconds per role since start() (two decimals); a role never seen running
   * is left out rather than reported as zero. */
  stop(): Record<string, number> {
    this.sample();
    const out: Record<string, number> = {};
    for (const role of Object.keys(this.roles)) {
      const byPid = this.readings.get(role);
      if (!byPid) continue;
      let ticks = 0;
      for (const [first, last] of byPid.values()) ticks += last - first;
      out[role] = Math.round((ticks / clockTicks()) * 100) / 100;
    }
    this.machineBusy = busyShare(this.machineAtStart, machineTimes());
    const bench = process.cpuUsage(this.benchAtStart);
    out.bench = Math.round((bench.user + bench.system) / 1e4) / 100;
    return out;
  }
}

/** Seconds per node-stage, three decimals (a role with no process in this run has none). */
export function perNodeStage(seconds: Record<string, number>, nodeStages: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(seconds).map(([role, s]) => [role, Math.round((s / Math.max(1, nodeStages)) * 1000) / 1000]),
  );
}

/** The machine's CPU time so far, over all its cores (the first line of /proc/stat, in clock ticks). */
export function machineTimes(procStat = fs.readFileSync('/proc/stat', 'utf8')): { busy: number; total: number } {
  // user nice system idle iowait irq softirq steal; the guest columns after them are inside user and nice already.
  const [user, nice, system, idle, iowait, irq, softirq, steal] = procStat
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const total = user! + nice! + system! + idle! + iowait! + irq! + softirq! + (steal ?? 0);
  return { busy: total - idle! - iowait!, total };
}

/**
 * The share of the machine's CPU time that went to work between two readings, everything on it included: near 1,
 * the run was bound by the machine, and its makespan follows the total CPU of all of it more than any one hop.
 */
export function busyShare(before: { busy: number; total: number }, after: { busy: number; total: number }): number {
  const total = after.total - before.total;
  return total > 0 ? Math.round(((after.busy - before.busy) / total) * 100) / 100 : NaN;
}

/** The shared local stack's processes (deploy/dev, by their pid files), which serve both tools' runs alike. */
export function stackRoles(): Record<string, PidSource> {
  const names = ['kube-apiserver', 'etcd', 'kube-controller-manager', 'kwok', 'simulator'];
  return Object.fromEntries(names.map((n) => [n, () => runningPid(n)]));
}
