import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { logDir, runDir } from './paths';

export function pidFile(name: string): string {
  return path.join(runDir, `${name}.pid`);
}

export function logFile(name: string): string {
  return path.join(logDir, `${name}.log`);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function runningPid(name: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(pidFile(name), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts a long-running service detached from this process, logging to .keelson/logs/<name>.log. */
export function startDetached(name: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): number {
  fs.mkdirSync(runDir, { recursive: true });
  fs.mkdirSync(logDir, { recursive: true });
  const out = fs.openSync(logFile(name), 'a');
  const child = spawn(command, args, {
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, ...env },
  });
  fs.closeSync(out);
  if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
  child.unref();
  fs.writeFileSync(pidFile(name), `${child.pid}\n`);
  return child.pid;
}

/** Stops a service started by startDetached: SIGTERM to its process group, then SIGKILL after a grace period. */
export async function stopDetached(name: string, graceMs = 10_000): Promise<boolean> {
  const pid = runningPid(name);
  fs.rmSync(pidFile(name), { force: true });
  if (pid === undefined) return false;
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) signalGroup(pid, 'SIGKILL');
  return true;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Polls until check() is true; on timeout the error names what was awaited and where its log is. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, log?: string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(250);
  }
  throw new Error(`${what} not ready after ${timeoutMs / 1000}s${log ? `; see ${log}` : ''}`);
}
