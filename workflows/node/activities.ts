import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { KeelsonActivities } from '../../activities/contract';
import { SHORT_CALL_TIMEOUT } from '../activity-timeouts';
import { STAGE_HEARTBEAT_TIMEOUT_SECONDS } from './stage-run';

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
 * The local activities one at a time, each asked for once the one before has resolved. Two in flight together may
 * resolve in two activations live and in one on replay, and the commands their continuations issue (the writer's fence
 * timer after a stale write, the loop's next step after an uncordon or a cordon) would then come in another order:
 * the history would not replay. In turn, each resolves before the next is asked for, live and on replay alike.
 * `inTurn` false (histories before the patch local-calls-in-turn): as they come.
 */
export function localCalls(inTurn: boolean): LocalCalls {
  if (!inTurn) return kubeLocal;
  let last: Promise<unknown> = Promise.resolve();
  return new Proxy(kubeLocal, {
    get(target, name) {
      const call = Reflect.get(target, name) as (...args: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        const result = last.then(() => call(...args));
        last = result.catch(() => undefined);
        return result;
      };
    },
  });
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
