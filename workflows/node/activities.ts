import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { KeelsonActivities } from '../../activities/contract';
import { SHORT_CALL_TIMEOUT } from '../activity-timeouts';
import { STAGE_HEARTBEAT_TIMEOUT_SECONDS } from './stage-run';
import type { NodeConditions } from './conditions';

// Activity proxies of the node workflow whose timeouts do not depend on a stage. Kubernetes calls are retried
// until they succeed: a node workflow has nothing better to do than try again.

export const kube = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

/**
 * The same calls as local activities: a marker in the workflow task that asked, where an activity costs three events
 * and a workflow task of three more. They may run twice (a crashed worker's task runs again), as an activity's
 * retry may: each is idempotent, and a write tests what it replaces and carries its order, so one run again after a
 * later write landed writes nothing (G1, model/node-write-order.ts).
 */
export const kubeLocal = proxyLocalActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

export type LocalCalls = typeof kubeLocal;

/**
 * The local activities one at a time, and each one's result handed over only once the workflow is quiet (patch
 * local-calls-in-turn). A local activity's result may reach a replay in the same activation as what reached the live
 * run before it: another local activity's result, or an event that came while a long one ran (across workflow
 * tasks). The commands each continuation issues (the writer's fence timer after a stale write, the node loop's next
 * stage, the drain after a cordon) would then come in another order, and the history would not replay. One at a
 * time, no two results meet; handed over once every coroutine the event woke has issued its commands, theirs come
 * first, as they did live. `inTurn` is asked at each call: a run recorded before the patch calls as they come until
 * it takes the patch, and its first call in turn waits for every call before it.
 */
export function localCalls(inTurn: () => boolean, conditions: NodeConditions): LocalCalls {
  let last: Promise<unknown> = Promise.resolve();
  return new Proxy(kubeLocal, {
    get(target, name) {
      const call = Reflect.get(target, name) as (...args: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        const result = inTurn() ? last.then(() => whenQuiet(call(...args), conditions)) : call(...args);
        last = Promise.allSettled([last, result]);
        return result;
      };
    },
  });
}

async function whenQuiet<T>(settling: Promise<T>, conditions: NodeConditions): Promise<T> {
  try {
    return await settling;
  } finally {
    await conditions.quiet();
  }
}

/** Waits that carry their own timeout (protected pods, drain, reboot, interrupt): a minute of slack on top of it. */
export function longWait(timeoutSeconds: number, summary: string) {
  return proxyActivities<KeelsonActivities>({
    startToCloseTimeout: (timeoutSeconds + 60) * 1000,
    // They heartbeat every poll: a worker killed mid-wait is noticed within seconds and the wait resumes elsewhere,
    // instead of after the whole timeout (an hour for a default interrupt).
    heartbeatTimeout: STAGE_HEARTBEAT_TIMEOUT_SECONDS * 1000,
    retry: { initialInterval: '1s', maximumInterval: '1 minute' },
    summary,
  });
}
