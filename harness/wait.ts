// Waiting for asynchronous progress, at every test level: a check polled until it passes. A timeout reports the
// check's last failure, and what was awaited when it is named.

import { sleep } from '../deploy/dev/processes';

const POLL_MS = 200;

export { sleep };

export function eventually<T>(check: () => Promise<T> | T, timeoutMs?: number): Promise<T>;
export function eventually<T>(what: string, check: () => Promise<T> | T, timeoutMs?: number): Promise<T>;
export async function eventually<T>(
  first: string | (() => Promise<T> | T),
  second?: number | (() => Promise<T> | T),
  third?: number,
): Promise<T> {
  const what = typeof first === 'string' ? first : undefined;
  const check = (typeof first === 'string' ? second : first) as () => Promise<T> | T;
  const timeoutMs = (typeof first === 'string' ? third : (second as number | undefined)) ?? 90_000;
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > end) {
        if (what === undefined) throw err;
        const msg = err instanceof Error ? err.message : String(err);
        throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}: ${msg}`);
      }
      await sleep(POLL_MS);
    }
  }
}

/** Polls until the probe returns a value, and returns it. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await sleep(POLL_MS);
  }
}
