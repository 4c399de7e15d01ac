import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toolPaths } from '../../deploy/dev/paths';
import { devServerArgs } from '../../deploy/dev/temporal';
import { portOpen, waitFor } from '../../deploy/dev/processes';
import { freePort, sleep } from './fleet';

// A Temporal dev server of one's own (never the shared one on 7233): the same arguments as deploy/dev/temporal.ts,
// on a free port, headless, with a database file that survives a restart. The bench starts one per measured run, so
// no run's history weighs on the next; the Temporal fault restarts one.

export class TemporalServer {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  port = 0;

  constructor(readonly dir: string) {}

  /** The server's process id while it runs (its CPU time is read from /proc). */
  get pid(): number | undefined {
    const c = this.child;
    return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get dbFile(): string {
    return path.join(this.dir, 'temporal.db');
  }

  async start(): Promise<void> {
    if (!this.port) this.port = await freePort();
    const args = devServerArgs({ port: this.port, dbFile: this.dbFile });
    const log = fs.openSync(path.join(this.dir, 'temporal.log'), 'a');
    const child = spawn(toolPaths().temporal, args, { stdio: ['ignore', log, log], detached: true });
    fs.closeSync(log);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    await waitFor('temporal dev server', () => portOpen(this.port), 60_000, path.join(this.dir, 'temporal.log'));
  }

  /** Stops the server (SIGTERM to its process group, SIGKILL after 10 s); the database file stays. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      child.kill('SIGTERM');
    }
    const done = await Promise.race([this.exited!.then(() => true), sleep(10_000).then(() => false)]);
    if (!done) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      await this.exited;
    }
    await waitFor('temporal port closed', async () => !(await portOpen(this.port)), 15_000);
  }
}

/** A Temporal dev server of its own in a fresh temporary directory; `dispose` stops it and removes its database. */
export async function freshTemporal(): Promise<{ server: TemporalServer; dispose(): Promise<void> }> {
  const server = new TemporalServer(fs.mkdtempSync(path.join(os.tmpdir(), 'keelson-bench-temporal-')));
  await server.start();
  return {
    server,
    async dispose() {
      await server.stop();
      fs.rmSync(server.dir, { recursive: true, force: true });
    },
  };
}
