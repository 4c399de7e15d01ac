import { proxyActivities } from '@temporalio/workflow';
import type { KeelsonActivities } from '../../activities/contract';
import { SHORT_CALL_TIMEOUT } from '../activity-timeouts';
import { STAGE_HEARTBEAT_TIMEOUT_SECONDS } from './stage-run';

// Activity proxies of the node workflow whose timeouts do not depend on a stage. Kubernetes calls are retried
// until they succeed: a node workflow has nothing better to do than try again.

export const kube = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

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
