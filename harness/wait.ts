// Waiting for asynchronous progress, at every test level and in the bench: a check polled until it passes. A timeout
// names what was awaited (when named) and reports the check's last failure, i.e. the last value it saw.

import { sleep } from '../deploy/dev/processes';

const POLL_MS = 200;

export { sleep };

export function eventually<T>(check: () => Promise<T> | T, timeoutMs?: number): Promise<T>;
export function eventually<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs?: number,
  pollMs?: number,
): Promise<T>;
export async function eventually<T>(
  first: string | (() => Promise<T> | T),
  second?: number | (() => Promise<T> | T),
  third?: number,
  fourth?: number,
): Promise<T> {
  const what = typeof first === 'string' ? first : undefined;
  const check = (typeof first === 'string' ? second : first) as () => Promise<T> | T;
  const timeoutMs = (typeof first === 'string' ? third : (second as number | undefined)) ?? 90_000;
  const pollMs = fourth ?? POLL_MS;
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > end) {
        // Unnamed checks are Jest assertions: their own message already says what was expected and what was seen.
        if (what === undefined) throw err;
        const msg = err instanceof Error ? err.message : String(err);
        throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}; last seen: ${msg}`);
      }
      await sleep(pollMs);
    }
  }
}

/** Reads until `check` passes on the value read (throwing means not yet); a timeout shows the last value read. */
export function eventuallyRead<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => void,
  timeoutMs?: number,
): Promise<T> {
  return eventually(
    what,
    async () => {
      const value = await read();
      try {
        check(value);
      } catch (err) {
        throw new Error(`${err instanceof Error ? err.message : String(err)}\nlast value: ${JSON.stringify(value)}`);
      }
      return value;
    },
    timeoutMs,
  );
}

/**
 * Polls until the probe returns a value, and returns it. Only `undefined` means not yet: a probe that throws fails the
 * wait at once, so a probe can refuse a state it must never see.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  pollMs = POLL_MS,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await sleep(pollMs);
  }
}
