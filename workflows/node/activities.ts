import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { KeelsonActivities } from '../../activities/contract';
import { SHORT_CALL_TIMEOUT } from '../activity-timeouts';
import { STAGE_HEARTBEAT_TIMEOUT_SECONDS } from './stage-run';
import { isPatched, PATCHES } from '../patches';

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

/** The short calls, local unless the history was recorded before the local-node-calls patch. */
export const shortCalls = () => (isPatched(PATCHES.localNodeCalls) ? kubeLocal : kube);

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
