import { Context } from '@temporalio/activity';

// Heartbeat and cancellation that also work when an activity function is called directly (tests, scripts):
// outside an activity there is nothing to heartbeat to and nothing cancels.

function current(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

export function heartbeat(details: unknown): void {
  current()?.heartbeat(details);
}

/** The activity's heartbeat timeout in ms; undefined outside an activity or when it has none (the server's 0). */
export function heartbeatTimeoutMs(): number | undefined {
  return current()?.info.heartbeatTimeoutMs || undefined;
}

/** The details of the last heartbeat an earlier attempt of this activity sent (undefined on the first). */
export function lastHeartbeat(): unknown {
  return current()?.info.heartbeatDetails;
}

/** Rejects with the activity's CancelledFailure when it is cancelled; never settles outside an activity. */
export function cancelled(): Promise<never> {
  return current()?.cancelled ?? new Promise<never>(() => undefined);
}

/** Throws the activity's CancelledFailure if its cancellation has been delivered (a fence before a create). */
export async function throwIfCancelled(): Promise<void> {
  const c = current();
  if (c?.cancellationSignal.aborted) await c.cancelled;
}

/** Sleeps, or throws CancelledFailure when the activity is cancelled first. */
export async function pause(ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([new Promise<void>((r) => (timer = setTimeout(r, ms))), cancelled()]);
  } finally {
    clearTimeout(timer);
  }
}
