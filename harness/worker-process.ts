import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../deploy/dev/paths';
import { sleep } from './wait';

// The child-process level of the harness: the real worker entry point as its own process, which a test or the bench
// may SIGKILL (no shutdown, no activity cancellation, as when a pod is OOM-killed or a machine dies) and start again.

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export interface WorkerProcessOptions {
  /** The worker's settings (docs/settings.md); PATH and HOME come from this process. */
  env: Record<string, string>;
  /** Its stdout and stderr are appended here. */
  logFile: string;
  /** Node options before the entry point, e.g. `--require` of a preload. */
  nodeArgs?: string[];
  /** Compiled JavaScript to run, as the image does; default workers/worker.ts under tsx. */
  compiledScript?: string;
  /** A cgroup's `cgroup.procs`: the worker starts inside that cgroup, so Node sizes its heaps from the cgroup's limit. */
  cgroupProcsFile?: string;
}

export class WorkerProcess {
  readonly exit: Promise<void>;
  /** kill() or stop() was called: an exit without it is the worker's own (a crash, an OOM kill). */
  endedOnRequest = false;

  constructor(readonly process: ChildProcess) {
    this.exit = new Promise((resolve) => process.once('exit', () => resolve()));
  }

  static start(o: WorkerProcessOptions): WorkerProcess {
    const entry = o.compiledScript
      ? [o.compiledScript]
      : ['--import', 'tsx', join(projectRoot, 'workers', 'worker.ts')];
    const node = [process.execPath, ...(o.nodeArgs ?? []), ...entry];
    // The shell joins the cgroup, then becomes Node (same process ID): Node reads its limit only as it starts.
    const [command, ...args] = o.cgroupProcsFile
      ? ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', o.cgroupProcsFile, ...node]
      : node;
    const child = spawn(command!, args, {
      cwd: projectRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(o.logFile, { flags: 'a' });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    return new WorkerProcess(child);
  }

  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /** SIGKILL, and its end awaited. */
  async kill(): Promise<void> {
    this.endedOnRequest = true;
    if (!this.running) return;
    this.process.kill('SIGKILL');
    await this.exit;
  }

  /** SIGTERM, and SIGKILL if it has not ended within 10 s. */
  async stop(): Promise<void> {
    this.endedOnRequest = true;
    if (!this.running) return;
    this.process.kill('SIGTERM');
    await Promise.race([this.exit, sleep(10_000)]);
    if (this.process.exitCode === null) this.process.kill('SIGKILL');
    await this.exit;
  }
}
